/**
 * One transaction at a time per ordered key in this process, and what waits for its turn
 * committed together. Two transactions on one key document contend (Firestore makes the later
 * one wait or abort and retry; the emulator answers with ABORTED and the client backs off a
 * second or more): serialized here, a process never contends with itself, and intake's events
 * of one key that arrive while a transaction is under way ride the next one as a group.
 */
export class KeyTurns {
  private readonly tails = new Map<string, Promise<unknown>>();
  private readonly waiting = new Map<string, { items: unknown[]; done: Promise<unknown> }>();

  /** Runs `work` when the key's earlier work here has ended. */
  run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const before = this.tails.get(key) ?? Promise.resolve();
    const mine = before.then(work, work);
    const tail = mine.catch(() => undefined);
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return mine;
  }

  /**
   * Adds `items` to the key's next group and resolves, with what `commit` answered, when that
   * group is committed (all the items that joined it, in the order they joined), or rejects
   * with its failure. Every item's caller gets the same answer.
   */
  join<I, R>(key: string, items: readonly I[], commit: (group: I[]) => Promise<R>): Promise<R> {
    const open = this.waiting.get(key) as { items: I[]; done: Promise<R> } | undefined;
    if (open) {
      open.items.push(...items);
      return open.done;
    }
    const group = { items: [...items] as unknown[], done: undefined as unknown as Promise<R> };
    group.done = this.run(key, () => {
      // The group closes when its turn comes: later items wait for the next one.
      if (this.waiting.get(key) === group) this.waiting.delete(key);
      return commit(group.items as I[]);
    });
    this.waiting.set(key, group);
    return group.done;
  }
}

const turnsOf = new WeakMap<object, KeyTurns>();

/** The turns of the processes's ordered keys in `store` (one per key store, so one per runtime). */
export function keyTurnsFor(store: object): KeyTurns {
  let turns = turnsOf.get(store);
  if (!turns) turnsOf.set(store, (turns = new KeyTurns()));
  return turns;
}
