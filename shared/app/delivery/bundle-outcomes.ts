import { BUNDLE_OUTCOME_LINGER_MS } from '../../domain/delivery/grouped-outcomes';
import { DeliveredLinger } from '../../ports/deliveries';

/** One member of a pushed bundle, as its attempt sees it (app/delivery/deliver.ts deliverPush). */
export interface BundleMember {
  /** How its DELIVERED outcome joins the group commit: it waits for the rest of the bundle, at most BUNDLE_OUTCOME_LINGER_MS. */
  readonly linger: DeliveredLinger;
  /** Its outcome is queued for the group commit, or it ended without one. Once counts; again is nothing. */
  in(): void;
}

/**
 * The members of one pushed bundle, until every one has its outcome: their DELIVERED outcomes
 * wait for each other (one group write, not one per event) and go as soon as the last is in. A
 * member is in once its outcome is queued or its attempt ended otherwise (a failure recorded on
 * its own, a deferral, a fault): never later than its own end, so none waits on itself.
 */
export class BundleOutcomes {
  private left: number;
  private readonly allIn: Promise<void>;
  private done!: () => void;

  constructor(members: number) {
    this.left = members;
    this.allIn = new Promise<void>((resolve) => (this.done = resolve));
    if (members === 0) this.done();
  }

  member(): BundleMember {
    let counted = false;
    return {
      linger: { lingerMs: BUNDLE_OUTCOME_LINGER_MS, until: this.allIn },
      in: () => {
        if (counted) return;
        counted = true;
        if (--this.left === 0) this.done();
      },
    };
  }
}
