import { FieldPath } from '@google-cloud/firestore';
import { typeHash } from '../../domain/events/event-type-catalogue';
import { CatalogueEntry, EventTypeEntry, EventTypeSample, EventTypeStore } from '../../ports/destinations';
import { FirestoreStore } from './stores';
import { COLLECTIONS } from '../../firestore-schema';

/** One catalogue document: `types` maps each type's hash to the type. */
interface ShardDoc {
  account: string;
  types?: Record<string, EventTypeEntry>;
}

/** A per-type document, as written before the catalogue (listed still: an upgrade loses nothing). */
interface PerTypeDoc {
  account: string;
  type: string;
  lastSeenAt: string;
  sample: string;
}

/**
 * `event-types/{account}~types-{shard}`: an account's types in a few documents (the catalogue
 * decides which holds a type), each a map hash of the type → {type, lastSeenAt, sample JSON text}. Every id of an account's
 * documents starts `{account}~` (as the per-type `{account}~{hash}` documents of before do):
 * one id-range query lists both shapes, and the account purge deletes both, with no index.
 */
export class FirestoreEventTypeStore extends FirestoreStore implements EventTypeStore {
  private get col() {
    return this.db.collection(COLLECTIONS.eventTypes);
  }

  async record(account: string, entries: readonly CatalogueEntry[]): Promise<void> {
    const shards = new Map<number, Record<string, EventTypeEntry>>();
    for (const e of entries) {
      const types = shards.get(e.shard) ?? {};
      types[typeHash(e.type)] = { type: e.type, lastSeenAt: e.lastSeenAt, sample: e.sample };
      shards.set(e.shard, types);
    }
    if (shards.size === 0) return;
    const batch = this.db.batch();
    // merge: the map's other keys (types another reconciler wrote) stay.
    for (const [shard, types] of shards) batch.set(this.col.doc(`${account}~types-${shard}`), { account, types }, { merge: true });
    await batch.commit();
    this.ops.writes += shards.size;
  }

  async known(account: string): Promise<CatalogueEntry[]> {
    return (await this.read(account)).entries;
  }

  async list(account: string): Promise<EventTypeSample[]> {
    const { entries, perType } = await this.read(account);
    const newest = new Map<string, EventTypeEntry>();
    for (const e of [...entries, ...perType]) {
      const seen = newest.get(e.type);
      if (!seen || seen.lastSeenAt < e.lastSeenAt) newest.set(e.type, e);
    }
    return [...newest.values()]
      .sort((a, b) => (a.type < b.type ? -1 : a.type > b.type ? 1 : 0))
      .map((e) => ({ account, type: e.type, lastSeenAt: e.lastSeenAt, sample: JSON.parse(e.sample) as Record<string, unknown> }));
  }

  /** The account's documents of both shapes: `~` and the next code point bound its ids (account ids hold no `~`). */
  private async read(account: string): Promise<{ entries: CatalogueEntry[]; perType: EventTypeEntry[] }> {
    const snap = await this.col
      .where(FieldPath.documentId(), '>=', `${account}~`)
      .where(FieldPath.documentId(), '<', `${account}\u007f`)
      .get();
    this.ops.reads += Math.max(1, snap.size);
    const entries: CatalogueEntry[] = [];
    const perType: EventTypeEntry[] = [];
    for (const d of snap.docs) {
      const shard = /~types-(\d+)$/.exec(d.id);
      if (shard) {
        const doc = d.data() as ShardDoc;
        entries.push(...Object.values(doc.types ?? {}).map((e) => ({ type: e.type, lastSeenAt: e.lastSeenAt, sample: e.sample, shard: Number(shard[1]) })));
      } else {
        const doc = d.data() as Partial<PerTypeDoc>;
        if (typeof doc.type === 'string' && typeof doc.lastSeenAt === 'string' && typeof doc.sample === 'string') perType.push({ type: doc.type, lastSeenAt: doc.lastSeenAt, sample: doc.sample });
      }
    }
    return { entries, perType };
  }
}
