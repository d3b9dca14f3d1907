import { structuredEvent } from '../../domain/events/cloudevents-http';
import { HeraldEvent } from '../../domain/events/event';
import { loneSurrogateIssues } from '../../domain/events/json-body';
import { eventAccount } from '../../domain/access/account';
import { CATALOGUE_SHARDS, entryBytes, SAMPLE_MAX_BYTES, sampleBudget, SHARD_MAX_BYTES, typeHash } from '../../domain/events/event-type-catalogue';
import { IntakeBatch } from '../../domain/intake/intake';
import { CatalogueEntry, EventTypeStore } from '../../ports/destinations';
import { Logger } from '../../ports/clock';
import { forEachLimited } from '../support/for-each-limited';

export { SAMPLE_MAX_BYTES };
/** A type seen again is rewritten (its lastSeenAt and sample) at most this often per process. */
export const CATALOGUE_REFRESH_MS = 3_600_000;
/** Accounts whose catalogue a process remembers; past it the least recent is forgotten (and read again when it returns). */
const REMEMBERED_ACCOUNTS = 1_000;
/** Types a failed write leaves for the next round, at most (their samples are ≤ 8 KB each). */
const PENDING_MAX = 2_000;
const CONCURRENCY = 4;

/**
 * The event as the console shows it: CloudEvents JSON (structured mode). Over `maxBytes` the
 * attributes stay whole and the data becomes `dataExcerpt`, its JSON cut to fit, with `truncated`.
 */
export function sampleOf(event: HeraldEvent, maxBytes = SAMPLE_MAX_BYTES): Record<string, unknown> {
  let whole = structuredEvent(event);
  // Binary-mode JSON data may spell a lone surrogate (`"\ud800"`): valid bytes, but no Firestore string can hold it decoded. The bytes, then.
  if (event.data.length > 0 && 'data' in whole && loneSurrogateIssues(whole.data, [], 1).length > 0) {
    const { data: _data, ...attributes } = whole;
    whole = { ...attributes, data_base64: event.data.toString('base64') };
  }
  const json = JSON.stringify(whole);
  if (Buffer.byteLength(json) <= maxBytes) return whole;
  const { data, data_base64: base64, ...attributes } = whole;
  const dataJson = base64 !== undefined ? String(base64) : JSON.stringify(data) ?? '';
  const room = Math.max(0, maxBytes - Buffer.byteLength(JSON.stringify(attributes)) - 64);
  // Cut by bytes; a character split at the cut becomes U+FFFD, which JSON carries as it is.
  const dataExcerpt = Buffer.from(dataJson).subarray(0, room).toString('utf8');
  return { ...attributes, truncated: true, dataExcerpt };
}

/** What this process knows an account's catalogue holds. */
interface AccountMemory {
  /** Type hash → when it was last seen (ms), which document holds it and what it takes there (bytes). */
  types: Map<string, { lastSeenMs: number; shard: number; bytes: number }>;
  shardBytes: number[];
}

/** A type to record: from this round's batches (`event`) or left by a failed write (`entry`, rendered then). */
interface Candidate {
  type: string;
  hash: string;
  seenMs: number;
  event?: HeraldEvent;
  entry?: CatalogueEntry;
}

/**
 * The console's Event types page, kept by the reconciler from the intake journal batches it
 * reads anyway, so ingest writes nothing for it. Per round, the (account, type) pairs of the
 * batches that are new to the catalogue, or last written more than CATALOGUE_REFRESH_MS
 * before, are written with their latest event as the sample: new types into the account's
 * first catalogue document with room (domain/events/event-type-catalogue.ts), so one write per
 * account and round whatever the number of types (a refreshed type is rewritten where it is).
 * It remembers what it wrote (bounded), so a type seen again within the interval costs
 * nothing; an account it does not remember is read once (a read per catalogue document).
 * It never fails a round: a failed read or write is logged and its types are tried again next
 * round (held in memory; a restart in between loses them until the type's next event).
 */
export class EventTypeCatalogue {
  private readonly accounts = new Map<string, AccountMemory>();
  private readonly pending = new Map<string, Map<string, Candidate>>();
  /** Accounts already warned of a full catalogue shard (once per process). */
  private readonly warnedFull = new Set<string>();

  constructor(
    private readonly store: Pick<EventTypeStore, 'record' | 'known'>,
    private readonly log: Logger,
    private readonly options: { refreshMs?: number } = {},
  ) {}

  /** Records the types of the batches' events; resolves how many types were written, never rejects. */
  async observe(batches: readonly IntakeBatch[]): Promise<{ written: number }> {
    let written = 0;
    try {
      const byAccount = this.candidates(batches);
      await forEachLimited([...byAccount], CONCURRENCY, async ([account, candidates]) => {
        const n = await this.recordAccount(account, candidates);
        written += n;
      });
    } catch (e) {
      this.log.warn('the event type catalogue failed this round; the next round tries again', { error: (e as Error).message });
    }
    return { written };
  }

  /** Each account's types in the batches (the latest event of each) and those a failed write left. */
  private candidates(batches: readonly IntakeBatch[]): Map<string, Map<string, Candidate>> {
    const byAccount = new Map<string, Map<string, Candidate>>();
    for (const [account, left] of this.pending) byAccount.set(account, left);
    this.pending.clear();
    const hashes = new Map<string, string>();
    for (const batch of batches) {
      const seenMs = Date.parse(batch.acceptedAt);
      for (const event of batch.events) {
        const account = eventAccount(event.attributes);
        const { type } = event.attributes;
        let hash = hashes.get(type);
        if (hash === undefined) hashes.set(type, (hash = typeHash(type)));
        let types = byAccount.get(account);
        if (!types) byAccount.set(account, (types = new Map()));
        const prior = types.get(hash);
        if (!prior || prior.seenMs <= seenMs) types.set(hash, { type, hash, seenMs, event });
      }
    }
    return byAccount;
  }

  private async recordAccount(account: string, candidates: Map<string, Candidate>): Promise<number> {
    let memory: AccountMemory;
    try {
      memory = await this.memoryOf(account);
    } catch (e) {
      this.keep(account, [...candidates.values()]);
      this.log.warn('the event type catalogue could not be read (Firestore); its types are tried again next round', { account, error: (e as Error).message });
      return 0;
    }
    const refreshMs = this.options.refreshMs ?? CATALOGUE_REFRESH_MS;
    const shardBytes = [...memory.shardBytes];
    const entries: CatalogueEntry[] = [];
    const planned: Candidate[] = [];
    const sizes = new Map<string, number>();
    for (const c of candidates.values()) {
      const seen = memory.types.get(c.hash);
      if (seen && c.seenMs - seen.lastSeenMs < refreshMs) continue;
      const placed = place(c, seen, shardBytes);
      if (!placed) {
        if (!this.warnedFull.has(account)) {
          this.warnedFull.add(account);
          this.log.warn('an account has more event types than its catalogue holds: new types are delivered but not listed on the Event types page', { account, eventType: c.type });
        }
        continue;
      }
      const { entry, bytes } = placed;
      shardBytes[entry.shard] = shardBytes[entry.shard]! + bytes - (seen?.shard === entry.shard ? seen.bytes : 0);
      entries.push(entry);
      planned.push({ ...c, entry });
      sizes.set(c.hash, bytes);
    }
    if (entries.length === 0) return 0;
    try {
      await this.store.record(account, entries);
    } catch (e) {
      // What it holds now is unknown (another writer, a too-large document): read it again next round.
      this.accounts.delete(account);
      this.keep(account, planned);
      this.log.warn('the event type catalogue could not be written (Firestore); its types are tried again next round', { account, types: entries.length, error: (e as Error).message });
      return 0;
    }
    memory.shardBytes = shardBytes;
    for (const c of planned) memory.types.set(c.hash, { lastSeenMs: c.seenMs, shard: c.entry!.shard, bytes: sizes.get(c.hash)! });
    return entries.length;
  }

  private async memoryOf(account: string): Promise<AccountMemory> {
    let memory = this.accounts.get(account);
    if (memory) {
      // Least recently used first: move it to the end.
      this.accounts.delete(account);
    } else {
      memory = { types: new Map(), shardBytes: new Array<number>(CATALOGUE_SHARDS).fill(0) };
      for (const e of await this.store.known(account)) {
        const hash = typeHash(e.type);
        const bytes = entryBytes(e);
        const lastSeenMs = Date.parse(e.lastSeenAt);
        // In two documents (two writers placed it): the newest is the one to rewrite.
        if ((memory.types.get(hash)?.lastSeenMs ?? -Infinity) < lastSeenMs) memory.types.set(hash, { lastSeenMs, shard: e.shard, bytes });
        if (e.shard >= 0 && e.shard < CATALOGUE_SHARDS) memory.shardBytes[e.shard]! += bytes;
      }
    }
    this.accounts.set(account, memory);
    if (this.accounts.size > REMEMBERED_ACCOUNTS) this.accounts.delete(this.accounts.keys().next().value!);
    return memory;
  }

  /** Holds types for the next round, rendered (no event kept), up to PENDING_MAX in all. */
  private keep(account: string, candidates: readonly Candidate[]): void {
    let held = [...this.pending.values()].reduce((n, m) => n + m.size, 0);
    const left = this.pending.get(account) ?? new Map<string, Candidate>();
    for (const c of candidates) {
      if (held >= PENDING_MAX) break;
      const entry = c.entry ?? { type: c.type, lastSeenAt: new Date(c.seenMs).toISOString(), sample: JSON.stringify(sampleOf(c.event!, SAMPLE_MAX_BYTES)), shard: 0 };
      left.set(c.hash, { type: c.type, hash: c.hash, seenMs: c.seenMs, entry });
      held++;
    }
    if (left.size > 0) this.pending.set(account, left);
  }
}

/**
 * Where a type goes and what it takes: a known type where it is (its sample sized for that
 * document), a new one in the first document with room; undefined when none has room.
 */
function place(c: Candidate, seen: { shard: number; bytes: number } | undefined, shardBytes: readonly number[]): { entry: CatalogueEntry; bytes: number } | undefined {
  const order = seen ? [seen.shard] : shardBytes.map((_, i) => i);
  for (const shard of order) {
    const others = shardBytes[shard]! - (seen?.shard === shard ? seen.bytes : 0);
    const entry: CatalogueEntry = c.entry
      ? { ...c.entry, shard }
      : { type: c.type, lastSeenAt: new Date(c.seenMs).toISOString(), sample: JSON.stringify(sampleOf(c.event!, sampleBudget(others))), shard };
    const bytes = entryBytes(entry);
    if (others + bytes <= SHARD_MAX_BYTES) return { entry, bytes };
  }
  return undefined;
}
