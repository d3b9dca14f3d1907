import { PullQueue } from '../../ports/messaging';
import { Logger } from '../../ports/clock';

/**
 * Pulled messages kept from every other pull for as long as their work goes on: each held for
 * a span, and held again for another once less than half of it is left. A hold set once at the
 * pull ran out under a slow Firestore (commits taking 10 s and more on a busy emulator, a batch
 * waiting for its rate turn): the batch lane then handed the same messages to the next pull,
 * and a batch already sent and being recorded went a second time — 25–36 s later in
 * `chaos --batched`. A reader that dies renews nothing: its messages come back once their hold
 * ends, as before.
 */
export class MessageHolds {
  private readonly held = new Map<string, { seconds: number; until: number }>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly queue: Pick<PullQueue, 'hold'>,
    private readonly now: () => number,
    private readonly log: Logger,
    /** How often holds are looked at (ms). */
    private readonly tickMs = HOLD_TICK_MS,
  ) {}

  /** Holds them now, for `seconds`, and on while they are tracked. */
  async hold(ackIds: readonly string[], seconds: number): Promise<void> {
    this.track(ackIds, seconds, this.now() + seconds * 1000);
    await this.queue.hold(ackIds, seconds);
  }

  /**
   * Tracks messages held until `until` (epoch ms) without holding them now — those the
   * subscription's own deadline keeps — to be held on for `seconds` at a time.
   */
  track(ackIds: readonly string[], seconds: number, until: number): void {
    for (const ackId of ackIds) this.held.set(ackId, { seconds, until });
    this.timer ??= setInterval(() => void this.renew(), this.tickMs).unref();
  }

  /** Their work ended (acked or given back): no longer held on. */
  forget(ackIds: readonly string[]): void {
    for (const ackId of ackIds) this.held.delete(ackId);
  }

  /** Stops renewing (the reader's run ended). */
  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.held.clear();
  }

  /** Holds again, for their span, every message with less than half of its hold left. */
  async renew(): Promise<void> {
    const now = this.now();
    const due = new Map<number, string[]>();
    for (const [ackId, h] of this.held) {
      if (h.until - now >= (h.seconds * 1000) / 2) continue;
      h.until = now + h.seconds * 1000;
      due.set(h.seconds, [...(due.get(h.seconds) ?? []), ackId]);
    }
    for (const [seconds, ackIds] of due) {
      await this.queue.hold(ackIds, seconds).catch((e: unknown) =>
        this.log.warn('held messages could not be held on; one whose work outlasts its hold may be handled twice', { error: (e as Error).message, messages: ackIds.length }),
      );
    }
  }
}

/** How often held messages are looked at: well within the shortest hold (10 s). */
export const HOLD_TICK_MS = 1000;
