import { Destination } from '../../domain/destinations/destination';
import { PUSHED_BUNDLE_LIMITS } from '../../domain/intake/lane-bundle';
import { coalesceStep } from '../../domain/intake/lane-coalescing';
import { LaneMessage, purposeOf } from '../../domain/intake/lane-message';
import { LaneDeps, publishBundled, publishToLane } from './lanes';

type Target = Pick<Destination, 'id' | 'lane' | 'batch'>;

interface Waiting {
  destination: Target;
  messages: LaneMessage[];
  settle: { resolve: () => void; reject: (e: unknown) => void }[];
  timer?: NodeJS.Timeout;
}

/** How many remembered last-event times make a sweep of the quiet ones worth it. */
const SWEEP_ABOVE = 4096;

/**
 * First attempts of one instance's busy destinations, gathered across requests into bundles
 * (the rules: domain/intake/lane-coalescing.ts); so are a slow destination's hand-overs onto its
 * retry lane, apart from its first attempts (each bundle goes on one lane). A bundle is one push:
 * on a lane whose pushes are few at a time (the emulator's two), hand-overs one to a push would
 * queue a slow destination's whole backlog behind them. Each caller's promise settles when the message is
 * published (with its bundle) or its publish failed: ingest answers for an event only then, so
 * nothing waits unpublished past an answer, and a crash meanwhile loses no accepted event.
 */
export class LaneCoalescer {
  private readonly waiting = new Map<string, Waiting>();
  private readonly lastAt = new Map<string, number>();

  constructor(
    private readonly deps: LaneDeps,
    private readonly lingerMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  publish(destination: Target, message: LaneMessage): Promise<void> {
    const now = this.now();
    const key = `${purposeOf(message)} ${destination.id}`;
    const open = this.waiting.get(key);
    const step = coalesceStep({ now, lastAt: this.lastAt.get(key), waiting: open?.messages.length, lingerMs: this.lingerMs, limit: PUSHED_BUNDLE_LIMITS.members });
    this.remember(key, now);
    if (step.kind === 'at-once') return publishToLane(this.deps, destination, message).then(() => undefined);
    const bundle = open ?? { destination, messages: [], settle: [] };
    const done = new Promise<void>((resolve, reject) => bundle.settle.push({ resolve, reject }));
    bundle.messages.push(message);
    if (step.kind === 'open') {
      this.waiting.set(key, bundle);
      bundle.timer = setTimeout(() => this.flush(key, bundle), Math.max(0, step.publishAt - now));
    } else if (step.full) this.flush(key, bundle);
    return done;
  }

  /** Publishes every bundle waiting now (a stop: nothing is left to a timer). */
  flushAll(): void {
    for (const [key, bundle] of [...this.waiting]) this.flush(key, bundle);
  }

  private flush(key: string, bundle: Waiting): void {
    if (this.waiting.get(key) === bundle) this.waiting.delete(key);
    if (bundle.timer) clearTimeout(bundle.timer);
    publishBundled(this.deps, bundle.destination, bundle.messages).then(
      () => bundle.settle.forEach((s) => s.resolve()),
      (e: unknown) => bundle.settle.forEach((s) => s.reject(e)),
    );
  }

  private remember(key: string, now: number): void {
    this.lastAt.delete(key);
    this.lastAt.set(key, now);
    if (this.lastAt.size <= SWEEP_ABOVE) return;
    // Oldest first (a Map keeps insertion order, and each event re-inserts its destination): quiet ones are forgotten.
    for (const [key, at] of this.lastAt) {
      if (now - at < this.lingerMs) break;
      this.lastAt.delete(key);
    }
  }
}
