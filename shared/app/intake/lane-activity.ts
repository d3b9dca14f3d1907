import { laneMoving } from '../../domain/intake/intake';
import { laneBehind } from '../../domain/intake/lane-backlog';
import { errorMessage } from '../../domain/error-message';
import { ReconcileDeps } from './reconcile-deps';

/** Whether destinations are being delivered to now, read once per round from their rate controllers. */
export class LaneActivity {
  private readonly seen = new Map<string, Promise<boolean>>();
  private marks?: Promise<Map<string, number>>;

  constructor(
    private readonly deps: ReconcileDeps,
    private readonly now: number,
    /** The lanes of each destination of the round. */
    private readonly lanes: ReadonlyMap<string, readonly string[]>,
  ) {}

  busy(destinationId: string): Promise<boolean> {
    let busy = this.seen.get(destinationId);
    if (!busy) {
      busy = this.laneBehind(destinationId).then(
        async (behind) => behind || laneMoving(Object.values((await this.deps.rateLeases.peek(destinationId))?.holders ?? {}), this.now, this.deps.graceMs),
      );
      this.seen.set(destinationId, busy);
    }
    return busy;
  }

  /** Whether one of the destination's lanes was seen behind lately: every lane of the round read at once, the first time one is asked. */
  private async laneBehind(destinationId: string): Promise<boolean> {
    const { laneMarks } = this.deps;
    if (!laneMarks) return false;
    this.marks ??= laneMarks.read([...new Set([...this.lanes.values()].flat())]).catch((e: unknown) => {
      this.deps.log.warn('reading lane marks failed; the round judges lanes by rate leases alone', { error: errorMessage(e) });
      return new Map<string, number>();
    });
    const marks = await this.marks;
    return (this.lanes.get(destinationId) ?? []).some((lane) => laneBehind(marks.get(lane), this.now, this.deps.graceMs));
  }
}
