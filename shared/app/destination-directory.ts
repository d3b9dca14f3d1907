import { Destination } from '../domain/destination';
import { DestinationIndex } from '../domain/destination-index';
import { Clock, DestinationStore } from '../ports';

/**
 * A directory that has not looked for this long reloads the registry whole: the change log
 * keeps entries a day (CHANGE_KEEP_MS), so half of that is safe.
 */
const RELOAD_AFTER_MS = 12 * 3600_000;

/**
 * The destination registry for the hot path, in memory and indexed by event type: routing
 * an event costs no Firestore read and no look at every destination.
 *
 * Read whole once; then, every `ttlMs`, only what changed (the store's change log: one
 * read when nothing did), never the whole registry again (10,000 destinations every 10 s
 * would be 1,000 reads a second per instance). A write through this process's admin API
 * is seen here at once (`changed`); other instances see it within `ttlMs`. A store without
 * a change log is reloaded whole each `ttlMs`.
 */
export class DestinationDirectory {
  private state?: { index: DestinationIndex; readTime?: Date; lookedAt: number };
  private loading?: Promise<DestinationIndex>;

  constructor(
    private readonly store: DestinationStore,
    private readonly clock: Clock,
    private readonly ttlMs: number,
  ) {}

  /** The registry as this instance knows it now, indexed. */
  current(): Promise<DestinationIndex> {
    const now = this.clock.now().getTime();
    if (this.state && now - this.state.lookedAt < this.ttlMs) return Promise.resolve(this.state.index);
    return this.loading ?? this.startLook(now);
  }

  /** One look at a time; a failed one is not kept, the next caller tries again. */
  private startLook(now: number): Promise<DestinationIndex> {
    this.loading = this.look(now).finally(() => (this.loading = undefined));
    return this.loading;
  }

  private async look(now: number): Promise<DestinationIndex> {
    const state = this.state;
    const incremental = state?.readTime !== undefined && this.store.changesSince !== undefined && now - state.lookedAt < RELOAD_AFTER_MS;
    if (incremental) {
      const changes = await this.store.changesSince!(state.readTime);
      for (const d of changes.upserted) state.index.put(d);
      for (const id of changes.removed) state.index.remove(id);
      this.state = { index: state.index, readTime: changes.readTime, lookedAt: now };
    } else if (this.store.changesSince) {
      const all = await this.store.changesSince(undefined);
      this.state = { index: DestinationIndex.of(all.upserted), readTime: all.readTime, lookedAt: now };
    } else {
      this.state = { index: DestinationIndex.of(await this.store.list()), lookedAt: now };
    }
    return this.state.index;
  }

  /** The destinations of `account` an event of `type` goes to, by id. */
  async matching(type: string, account?: string): Promise<Destination[]> {
    return (await this.current()).matching(type, account);
  }

  /**
   * A destination by id. One this instance has not seen yet (created on another instance since
   * its last look) brings a look at the change log now, which brings every other new one with
   * it: a burst of new destinations costs a read each, once, not a read per miss. Still not
   * there after a look begun after the miss (deleted, or never created): the store is asked.
   */
  async get(id: string): Promise<Destination | undefined> {
    const found = (await this.current()).get(id);
    if (found) return found;
    if (this.store.changesSince !== undefined) {
      const missedAt = this.clock.now().getTime();
      // The change log read after the miss holds every destination written before it; what it
      // lacks (deleted, or never there) is asked of the store, which has the last word.
      const seen = (await this.lookedSince(missedAt)).get(id);
      if (seen) return seen;
    }
    return this.store.get(id);
  }

  /** The index after a look that began at or after `t` (joining one under way only if it began then). */
  private async lookedSince(t: number): Promise<DestinationIndex> {
    for (;;) {
      if (this.state !== undefined && this.state.lookedAt >= t) return this.state.index;
      // A look under way that began before `t` may not hold what was written since: after it, another.
      await (this.loading ?? this.startLook(this.clock.now().getTime()));
    }
  }

  /**
   * A destination as the store has it now, whatever this instance holds: for a refusal made on
   * the cached view, which another instance's change may not have reached yet (deliver). The
   * index takes what was read.
   */
  async fresh(id: string): Promise<Destination | undefined> {
    const destination = await this.store.get(id);
    this.changed(id, destination);
    return destination;
  }

  /**
   * This process wrote `destination` (or deleted `id`): routing here sees it at once. The
   * change log brings the same change again, which changes nothing.
   */
  changed(id: string, destination?: Destination): void {
    if (!this.state) return;
    if (destination) this.state.index.put(destination);
    else this.state.index.remove(id);
  }
}
