import { Destination } from '../domain/destination';
import { DestinationIndex } from '../domain/destination-index';
import { Clock, DestinationStore, Logger } from '../ports';

/** After a listener failed, how long the directory polls before it listens again. */
const REWATCH_AFTER_MS = 30_000;

/**
 * The destination registry for the hot path, in memory and indexed by event type: routing
 * an event costs no Firestore read and no look at every destination.
 *
 * With a store that can be followed (Firestore's listener), the registry is read once and
 * then kept current change by change: an instance pays a read per change, not a read per
 * destination every `ttlMs` (10,000 destinations every 10 s would be 1,000 reads a second).
 * Otherwise, or while a listener is down, it is reloaded whole when `ttlMs` has passed.
 * Either way a write through this process's admin API is seen at once (`changed`); other
 * instances see it when the listener brings it, or within `ttlMs`.
 */
export class DestinationDirectory {
  private polled?: { at: number; value: Promise<DestinationIndex> };
  private watched?: { ready: Promise<DestinationIndex>; live?: DestinationIndex; stop: () => void };
  private rewatchAt = 0;
  private closed = false;

  constructor(
    private readonly store: DestinationStore,
    private readonly clock: Clock,
    private readonly ttlMs: number,
    private readonly log?: Logger,
  ) {}

  /** The registry as this instance knows it now, indexed. */
  current(): Promise<DestinationIndex> {
    return this.index();
  }

  private index(): Promise<DestinationIndex> {
    if (this.watched) return this.watched.ready;
    const now = this.clock.now().getTime();
    if (this.store.watch && !this.closed && now >= this.rewatchAt) return this.watch();
    if (!this.polled || now - this.polled.at >= this.ttlMs) {
      const value = this.store.list().then((all) => DestinationIndex.of(all));
      this.polled = { at: now, value };
      // A failed load must not be cached: the next caller tries again.
      value.catch(() => {
        if (this.polled?.value === value) this.polled = undefined;
      });
    }
    return this.polled.value;
  }

  private watch(): Promise<DestinationIndex> {
    let settle!: { resolve: (index: DestinationIndex) => void; reject: (e: Error) => void };
    const ready = new Promise<DestinationIndex>((resolve, reject) => (settle = { resolve, reject }));
    const watched: NonNullable<DestinationDirectory['watched']> = { ready, stop: () => undefined };
    this.watched = watched;
    watched.stop = this.store.watch!(
      (change) => {
        if (change.initial || !watched.live) {
          watched.live = DestinationIndex.of(change.upserted);
          settle.resolve(watched.live);
          return;
        }
        for (const d of change.upserted) watched.live.put(d);
        for (const id of change.removed) watched.live.remove(id);
      },
      (error) => {
        // The listener is over: poll for a while, then listen again.
        if (this.watched === watched) this.watched = undefined;
        this.rewatchAt = this.clock.now().getTime() + REWATCH_AFTER_MS;
        this.log?.warn('destination listener failed: polling the registry until it listens again', { error: error.message, retryInMs: REWATCH_AFTER_MS });
        settle.reject(error);
      },
    );
    // A first snapshot that never comes (the listener failed) falls back to a load.
    return ready.catch(() => this.index());
  }

  list(): Promise<Destination[]> {
    return this.index().then((i) => i.list());
  }

  /** The destinations an event of `type` goes to, by id. */
  async matching(type: string): Promise<Destination[]> {
    return (await this.index()).matching(type);
  }

  async get(id: string): Promise<Destination | undefined> {
    const found = (await this.index()).get(id);
    // A destination created on another instance and not seen here yet: ask the store once.
    return found ?? (await this.store.get(id));
  }

  /**
   * This process wrote `destination` (or deleted `id`): routing here sees it at once. The
   * listener brings the same change again, which changes nothing.
   */
  changed(id: string, destination?: Destination): void {
    const live = this.watched?.live;
    if (live) {
      if (destination) live.put(destination);
      else live.remove(id);
    }
    this.polled = undefined;
  }

  /** Stops following the registry (the runtime closes). */
  close(): void {
    this.closed = true;
    this.watched?.stop();
    this.watched = undefined;
  }
}
