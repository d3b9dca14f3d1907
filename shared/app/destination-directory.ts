import { Destination } from '../domain/destination';
import { Clock, DestinationStore } from '../ports';

/**
 * A read-through cache of the destination registry for the hot path: routing every event
 * must not cost a Firestore query. Entries live `ttlMs`; the admin API invalidates the
 * cache of its own process at once, other instances see a change within `ttlMs`.
 */
export class DestinationDirectory {
  private all?: { at: number; value: Promise<Destination[]> };

  constructor(
    private readonly store: DestinationStore,
    private readonly clock: Clock,
    private readonly ttlMs: number,
  ) {}

  list(): Promise<Destination[]> {
    const now = this.clock.now().getTime();
    if (!this.all || now - this.all.at >= this.ttlMs) {
      const value = this.store.list();
      this.all = { at: now, value };
      // A failed load must not be cached: the next caller tries again.
      value.catch(() => {
        if (this.all?.value === value) this.all = undefined;
      });
    }
    return this.all.value;
  }

  async get(id: string): Promise<Destination | undefined> {
    const found = (await this.list()).find((d) => d.id === id);
    // A destination created on another instance since the last load: ask the store once.
    return found ?? (await this.store.get(id));
  }

  invalidate(): void {
    this.all = undefined;
  }
}
