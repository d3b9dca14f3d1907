import { Destination } from '../../domain/destinations/destination';
import { PUSHED_BUNDLE_LIMITS } from '../../domain/intake/lane-bundle';
import { coalesceStep } from '../../domain/intake/lane-coalescing';
import { LaneMessage } from '../../domain/intake/lane-message';
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
 * (the rules: domain/intake/lane-coalescing.ts). Each caller's promise settles when the message is
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
    const open = this.waiting.get(destination.id);
    const step = coalesceStep({ now, lastAt: this.lastAt.get(destination.id), waiting: open?.messages.length, lingerMs: this.lingerMs, limit: PUSHED_BUNDLE_LIMITS.members });
    this.remember(destination.id, now);
    if (step.kind === 'at-once') return publishToLane(this.deps, destination, message).then(() => undefined);
    const bundle = open ?? { destination, messages: [], settle: [] };
    const done = new Promise<void>((resolve, reject) => bundle.settle.push({ resolve, reject }));
    bundle.messages.push(message);
    if (step.kind === 'open') {
      this.waiting.set(destination.id, bundle);
      bundle.timer = setTimeout(() => this.flush(destination.id, bundle), Math.max(0, step.publishAt - now));
    } else if (step.full) this.flush(destination.id, bundle);
    return done;
  }

  /** Publishes every bundle waiting now (a stop: nothing is left to a timer). */
  flushAll(): void {
    for (const [id, bundle] of [...this.waiting]) this.flush(id, bundle);
  }

  private flush(id: string, bundle: Waiting): void {
    if (this.waiting.get(id) === bundle) this.waiting.delete(id);
    if (bundle.timer) clearTimeout(bundle.timer);
    publishBundled(this.deps, bundle.destination, bundle.messages).then(
      () => bundle.settle.forEach((s) => s.resolve()),
      (e: unknown) => bundle.settle.forEach((s) => s.reject(e)),
    );
  }

  private remember(id: string, now: number): void {
    this.lastAt.delete(id);
    this.lastAt.set(id, now);
    if (this.lastAt.size <= SWEEP_ABOVE) return;
    // Oldest first (a Map keeps insertion order, and each event re-inserts its destination): quiet ones are forgotten.
    for (const [key, at] of this.lastAt) {
      if (now - at < this.lingerMs) break;
      this.lastAt.delete(key);
    }
  }
}
