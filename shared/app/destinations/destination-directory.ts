import { Destination } from '../../domain/destinations/destination';
import { DestinationIndex } from '../../domain/destinations/destination-index';
import { DEFAULT_ACCOUNT, splitDestinationId } from '../../domain/ids';
import { generateSecretsKey, SecretBox } from '../../domain/access/secret-box';
import { DEFAULT_DIRECTORY_MAX_DESTINATIONS } from '../../config-schema';
import { Clock } from '../../ports/clock';
import { DestinationStore } from '../../ports/destinations';

/**
 * A directory that has not looked for this long drops what it holds (each account is read
 * again when next used): the change log keeps entries a day (CHANGE_KEEP_MS), so half of
 * that is safe.
 */
const RELOAD_AFTER_MS = 12 * 3600_000;

/** The destinations of the accounts in hand, matched by event type; none outside those accounts. */
export type AccountMatcher = (type: string, account: string) => Destination[];

/**
 * The destination registry for the hot path, in memory and indexed by event type: routing
 * an event costs no Firestore read and no look at every destination.
 *
 * It holds only what is used: routing an account's first event reads that account's
 * destinations (one query, its own documents only: an event is matched against all of them);
 * a delivery's destination of an account not held is read alone (one read: a deliver instance
 * holds the destinations it delivers to, not their neighbours). The least recently used are
 * dropped past `maxDestinations`. Then, every `ttlMs`, only what changed (the store's change
 * log: one read when nothing did) is applied to what is held,
 * never the registry again: a fresh instance starts from where the log stands (one read), so
 * its catch-up costs what changed, not what exists. A write through this process's admin API is
 * seen here at once (`changed`); other instances see it within `ttlMs`. A store without a
 * change log has what it holds dropped each `ttlMs`, and read again when used.
 *
 * The signing secrets are held sealed (with a key of this process's own, never stored) and
 * opened when a destination is handed out: a heap holds no plaintext secret at rest.
 */
export class DestinationDirectory {
  private readonly index = new DestinationIndex();
  /** The accounts held whole, least recently used first (a Map keeps insertion order), with when each was last used. */
  private readonly held = new Map<string, number>();
  /** Destinations held alone (read by `get`; their accounts are not held), sealed, least recently used first. */
  private readonly singles = new Map<string, { destination: Destination; used: number }>();
  /** Destinations being read alone; `stale` once this process wrote one meanwhile (the read is then not kept). */
  private readonly singleLoads = new Map<string, { done: Promise<Destination | undefined>; stale: boolean }>();
  /** Orders uses across accounts and singles, for dropping the least recently used of either. */
  private uses = 0;
  /** Accounts being read, and this process's writes to them meanwhile (applied after). */
  private readonly loads = new Map<string, { done: Promise<void>; own: [string, Destination | undefined][] }>();
  /** Accounts in use by a caller right now: never dropped for room under it. */
  private readonly pins = new Map<string, number>();
  /** Every change after it that is not applied yet comes with the next look. */
  private cursor?: Date;
  private lookedAt?: number;
  private looking?: Promise<void>;
  private readonly box = SecretBox.fromConfig(generateSecretsKey());

  constructor(
    private readonly store: DestinationStore,
    private readonly clock: Clock,
    private readonly ttlMs: number,
    private readonly maxDestinations = DEFAULT_DIRECTORY_MAX_DESTINATIONS,
  ) {}

  /** How many destinations are held now. */
  get size(): number {
    return this.index.size + this.singles.size;
  }

  /** The destinations of `account` an event of `type` goes to, by id. */
  matching(type: string, account: string = DEFAULT_ACCOUNT): Promise<Destination[]> {
    return this.withAccounts([account], (match) => match(type, account));
  }

  /**
   * Runs `use` with every account of `accounts` held (read when it is not), at once: none of
   * them is dropped while it runs, so what it matches is each account's whole list.
   */
  async withAccounts<T>(accounts: Iterable<string>, use: (matching: AccountMatcher, exists: (id: string) => boolean) => T): Promise<T> {
    const wanted = [...new Set(accounts)];
    await this.lookedRecently();
    for (const a of wanted) this.pins.set(a, (this.pins.get(a) ?? 0) + 1);
    try {
      // A drop (a store without a change log, each ttl) may take an account between the reads and now: read again.
      while (!wanted.every((a) => this.held.has(a))) await Promise.all(wanted.map((a) => this.hold(a)));
      for (const a of wanted) this.touch(a);
      return use(
        (type, account) => this.index.matching(type, account).map((d) => this.open(d)),
        (id) => this.index.get(id) !== undefined,
      );
    } finally {
      for (const a of wanted) {
        const left = (this.pins.get(a) ?? 1) - 1;
        if (left === 0) this.pins.delete(a);
        else this.pins.set(a, left);
      }
      this.makeRoom();
    }
  }

  /**
   * A destination by id. Of an account not held, that destination alone is read (one read; the
   * change log keeps it current like the rest) and held. Of an account held, one this instance
   * does not have (created on another instance since its last look) brings a look at the
   * change log now, which brings every other new one with it: a burst of new destinations costs
   * a read each, once, not a read per miss. Still not there after a look begun after the miss
   * (deleted, or never created): the store is asked.
   */
  async get(id: string): Promise<Destination | undefined> {
    const { account } = splitDestinationId(id);
    await this.lookedRecently();
    if (!this.held.has(account) && !this.loads.has(account)) return this.single(id);
    const found = await this.withAccounts([account], () => this.index.get(id));
    if (found) return this.open(found);
    if (this.store.changesSince !== undefined) {
      const missedAt = this.clock.now().getTime();
      // The change log read after the miss holds every destination written before it; what it
      // lacks (deleted, or never there) is asked of the store, which has the last word.
      await this.lookedSince(missedAt);
      const seen = this.index.get(id);
      if (seen) return this.open(seen);
    }
    return this.store.get(id);
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
   * change log brings the same change again, which changes nothing. Of an account not held
   * nothing is kept: its read, when it comes, finds the write.
   */
  changed(id: string, destination?: Destination): void {
    const { account } = splitDestinationId(id);
    const loading = this.loads.get(account);
    if (loading) loading.own.push([id, destination]);
    else if (this.held.has(account)) this.apply(id, destination);
    const single = this.singleLoads.get(id);
    if (single) single.stale = true;
    if (this.singles.has(id)) this.applySingle(id, destination);
    this.makeRoom();
  }

  /** A destination of an account not held: the one held alone, or read alone (once, however many ask at the same time). */
  private async single(id: string): Promise<Destination | undefined> {
    const held = this.singles.get(id);
    if (held) {
      held.used = ++this.uses;
      this.singles.delete(id);
      this.singles.set(id, held);
      return this.open(held.destination);
    }
    let load = this.singleLoads.get(id);
    if (!load) {
      const started = { done: Promise.resolve<Destination | undefined>(undefined), stale: false };
      started.done = this.readSingle(id, started).finally(() => this.singleLoads.delete(id));
      this.singleLoads.set(id, started);
      load = started;
    }
    return load.done;
  }

  private async readSingle(id: string, load: { stale: boolean }): Promise<Destination | undefined> {
    const floor = this.cursor;
    const destination = await this.store.get(id);
    this.rewindTo(floor);
    // Its account read meanwhile holds it already; a write of this process meanwhile is newer than this read.
    if (destination && !load.stale && !this.held.has(splitDestinationId(id).account)) {
      this.applySingle(id, destination);
      this.makeRoom();
    }
    return destination;
  }

  private applySingle(id: string, destination: Destination | undefined): void {
    this.singles.delete(id);
    if (destination) this.singles.set(id, { destination: this.seal(destination), used: ++this.uses });
  }

  /**
   * A read that began at `floor` ended after a look moved the cursor on: what that look brought
   * was not applied to what the read returned, so the next look reads again from `floor` (a
   * change read twice changes nothing).
   */
  private rewindTo(floor: Date | undefined): void {
    if (floor !== undefined && this.cursor !== undefined && this.cursor.getTime() > floor.getTime()) this.cursor = floor;
  }

  private apply(id: string, destination: Destination | undefined): void {
    if (destination) this.index.put(this.seal(destination));
    else this.index.remove(id);
  }

  /** Brings what is held up to date if `ttlMs` passed since the last look (what routing does first). */
  caughtUp(): Promise<void> {
    return this.lookedRecently();
  }

  /** The change log looked at within `ttlMs` (or, without one, what is held at most that old). */
  private lookedRecently(): Promise<void> {
    const now = this.clock.now().getTime();
    if (this.lookedAt !== undefined && now - this.lookedAt < this.ttlMs) return Promise.resolve();
    return this.looking ?? this.startLook(now);
  }

  /** One look at a time; a failed one is not kept, the next caller tries again. */
  private startLook(now: number): Promise<void> {
    this.looking = this.look(now).finally(() => (this.looking = undefined));
    return this.looking;
  }

  private async look(now: number): Promise<void> {
    if (this.store.changesSince === undefined) {
      this.dropAll();
      this.lookedAt = now;
      return;
    }
    const since = this.cursor;
    if (since === undefined || this.lookedAt === undefined || now - this.lookedAt >= RELOAD_AFTER_MS) {
      // Fresh, or idle past what the change log surely keeps: start from where it stands now,
      // holding nothing; each account is read again when used. Never the whole registry.
      const start = await this.store.changesSince(undefined);
      this.dropAll();
      this.cursor = start.readTime;
      this.lookedAt = now;
      return;
    }
    const changes = await this.store.changesSince(since);
    for (const d of changes.upserted) {
      if (this.held.has(splitDestinationId(d.id).account)) this.index.put(this.seal(d));
      if (this.singles.has(d.id)) this.applySingle(d.id, d);
    }
    for (const id of changes.removed) {
      this.index.remove(id);
      this.singles.delete(id);
    }
    // An account read while this look ran may predate changes it missed: its read moved the cursor back, and it stays there.
    if (this.cursor === since) this.cursor = changes.readTime;
    this.lookedAt = now;
    this.makeRoom();
  }

  /** After a look that began at or after `t` (joining one under way only if it began then). */
  private async lookedSince(t: number): Promise<void> {
    for (;;) {
      if (this.lookedAt !== undefined && this.lookedAt >= t) return;
      // A look under way that began before `t` may not hold what was written since: after it, another.
      await (this.looking ?? this.startLook(this.clock.now().getTime()));
    }
  }

  /** The account held, read once however many ask at the same time. */
  private hold(account: string): Promise<void> {
    if (this.held.has(account)) return Promise.resolve();
    const under = this.loads.get(account);
    if (under) return under.done;
    const load = { done: Promise.resolve(), own: [] as [string, Destination | undefined][] };
    load.done = this.load(account, load.own).finally(() => this.loads.delete(account));
    this.loads.set(account, load);
    return load.done;
  }

  private async load(account: string, own: [string, Destination | undefined][]): Promise<void> {
    // Every change after `floor` that this read misses is in the change log from `floor` on.
    const floor = this.cursor;
    const destinations = await this.store.listAccount(account);
    this.rewindTo(floor);
    for (const d of destinations) this.index.put(this.seal(d));
    for (const [id, d] of own) this.apply(id, d);
    this.held.set(account, ++this.uses);
  }

  /** Most recently used last. */
  private touch(account: string): void {
    this.held.delete(account);
    this.held.set(account, ++this.uses);
  }

  /**
   * Drops the least recently used until at most `maxDestinations` are held: an account not in
   * use (whole) or a destination held alone, whichever was used longer ago.
   */
  private makeRoom(): void {
    const accounts = this.held.entries();
    const singles = this.singles.entries();
    let account = nextUnpinned(accounts, this.pins);
    let single = singles.next();
    while (this.size > this.maxDestinations && (account || !single.done)) {
      if (account && (single.done || account[1] < single.value[1].used)) {
        this.held.delete(account[0]);
        this.index.removeAccount(account[0]);
        account = nextUnpinned(accounts, this.pins);
      } else if (!single.done) {
        this.singles.delete(single.value[0]);
        single = singles.next();
      }
    }
  }

  /** Drops everything held (an account in use is read again before its user goes on: withAccounts). */
  private dropAll(): void {
    for (const account of [...this.held.keys()]) {
      this.held.delete(account);
      this.index.removeAccount(account);
    }
    this.singles.clear();
  }

  private seal(d: Destination): Destination {
    const seal = (secret: string) => this.box.seal(secret, sealContext(d.id));
    const held: Destination = { ...d, secret: seal(d.secret) };
    if (d.previousSecrets) held.previousSecrets = d.previousSecrets.map((p) => ({ ...p, secret: seal(p.secret) }));
    return held;
  }

  private open(d: Destination): Destination {
    const open = (sealed: string) => this.box.open(sealed, sealContext(d.id));
    const opened: Destination = { ...d, secret: open(d.secret) };
    if (d.previousSecrets) opened.previousSecrets = d.previousSecrets.map((p) => ({ ...p, secret: open(p.secret) }));
    return opened;
  }
}

/** The next account of `entries` not in use, if any. */
function nextUnpinned(entries: IterableIterator<[string, number]>, pins: ReadonlyMap<string, number>): [string, number] | undefined {
  for (let next = entries.next(); !next.done; next = entries.next()) if (!pins.has(next.value[0])) return next.value;
  return undefined;
}

function sealContext(destinationId: string): string {
  return `herald:directory:${destinationId}`;
}
