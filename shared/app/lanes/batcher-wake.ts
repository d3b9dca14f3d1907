import { leaseRenewal, NOTHING_SEEN, PublisherView, publisherStep } from '../../domain/modes/batcher-lease';
import { BatcherLeaseStore } from '../../ports/messaging';
import { Clock, Logger } from '../../ports/clock';

/**
 * Starting a batcher when events reach the batch lane and none is running (the rules, as
 * data and pure functions: domain/modes/batcher-lease.ts). On GCP the batcher
 * runs inside each scheduled pump run (once a minute) and ends once the lane has been quiet
 * for IDLE_END_MS: without a wake-up, the first event after a lull would wait for the next
 * minute's run whatever its destination's `maxWaitMs`.
 *
 * A running batcher keeps a lease (one document: until when it is sure to go on pulling), renewed
 * while it has events — at most one write every few seconds, none while it idles. Whoever
 * publishes onto the batch lane (ingest, route) asks a BatcherWaker: while the lease it last
 * read runs, nothing is read or sent; past it, one read (at most every `lookEveryMs` per
 * instance); and if no batcher holds it, a wake-up message (at most every `wakeEveryMs` per
 * instance), which Pub/Sub pushes to the pump: a run starts at once. Two runs at once are
 * safe (a second batcher takes a share of the messages and makes smaller batches, never wrong
 * ones). Nothing here may fail a publish: an error is logged, and the next scheduled run
 * comes within the minute as before.
 */
export interface BatcherWakerDeps {
  lease: BatcherLeaseStore;
  /** Publishes one wake-up onto the wake topic. */
  wake: () => Promise<void>;
  clock: Clock;
  log: Logger;
}

/** A publisher's side: call `published` once events went onto the batch lane. */
export class BatcherWaker {
  private view: PublisherView = { ...NOTHING_SEEN };
  private checking?: Promise<void>;

  constructor(private readonly deps: BatcherWakerDeps) {}

  /** Resolves once a batcher is known to run or has been woken; never rejects. */
  published(): Promise<void> {
    if (publisherStep(this.view, this.deps.clock.now().getTime()) === 'nothing') return Promise.resolve();
    this.checking ??= this.check()
      .catch((e: unknown) => this.deps.log.warn('could not make sure a batcher runs; the next scheduled run sends the batch lane\'s events', { error: (e as Error).message }))
      .finally(() => (this.checking = undefined));
    return this.checking;
  }

  private async check(): Promise<void> {
    const now = () => this.deps.clock.now().getTime();
    if (publisherStep(this.view, now()) === 'look') {
      this.view.lookedAt = now();
      const until = await this.deps.lease.aliveUntil();
      this.view.knownUntil = Math.max(this.view.knownUntil, until?.getTime() ?? 0);
    }
    if (publisherStep(this.view, now()) !== 'wake') return;
    this.view.wokeAt = now();
    await this.deps.wake();
    this.deps.log.info('no batcher was running: a pump run woken to start one', { leaseUntil: this.view.knownUntil > 0 ? new Date(this.view.knownUntil).toISOString() : undefined });
  }
}

/** A batcher's side: `pulling(horizon)` on each turn, with until when the run is sure to go on pulling (undefined: not sure at all). */
export class BatcherLeaseKeeper {
  private until = 0;

  constructor(
    private readonly lease: BatcherLeaseStore,
    private readonly log: Logger,
    /** The batcher's clock (ms): its run's times are wall-clock ones. */
    private readonly now: () => number = Date.now,
  ) {}

  pulling(horizon: number | undefined): void {
    const renewed = leaseRenewal(this.until, horizon, this.now());
    if (renewed === undefined) return;
    this.until = renewed;
    this.lease.keepAlive(new Date(renewed)).catch((e: unknown) => this.log.warn('batcher: its lease could not be renewed; publishers may wake another run', { error: (e as Error).message }));
  }
}
