import { laneOfSubscription, shouldMark } from '../../domain/intake/lane-backlog';
import { Clock, Logger } from '../../ports/clock';
import { LaneMarks } from '../../ports/intake';
import { errorMessage } from '../../domain/error-message';
import { LaneAges } from '../../domain/health/lane-ages';

/**
 * Marks a lane behind when this instance takes a first-attempt message from it long after it
 * was published there (domain/intake/lane-backlog.ts), at most once per mark interval per lane: a
 * backed-up lane costs a write every few seconds per instance, a lane that keeps up nothing.
 * The write is not awaited and its failure only logged: a push never waits on it, and a mark
 * missed makes the reconciler recover a late delivery (a duplicate), never lose one.
 */
export class LaneBacklog {
  private readonly lastMarks = new Map<string, number>();

  constructor(
    private readonly marks: LaneMarks,
    private readonly clock: Clock,
    private readonly log: Logger,
    /** The reconciler's grace (HERALD_RECONCILE_AFTER_MS): how late is behind, and how often a mark is written, follow it. */
    private readonly graceMs: number,
    /** Every first attempt's age, for the Overview panel in local mode (domain/health/lane-ages.ts). */
    private readonly ages?: LaneAges,
  ) {}

  /** A first-attempt message published on its lane at `publishTime` (Pub/Sub's), pushed on `subscription`. */
  seen(subscription: string, publishTime: Date): void {
    const lane = laneOfSubscription(subscription);
    if (lane === undefined) return;
    const now = this.clock.now().getTime();
    this.ages?.seen(publishTime.getTime(), now);
    if (!shouldMark(this.lastMarks.get(lane), publishTime.getTime(), now, this.graceMs)) return;
    this.lastMarks.set(lane, now);
    this.marks.mark(lane, new Date(now)).catch((e: unknown) => this.log.debug('marking a lane behind failed; the reconciler may recover a late delivery as well', { lane, error: errorMessage(e) }));
  }
}
