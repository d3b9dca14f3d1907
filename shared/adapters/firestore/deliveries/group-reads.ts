import { DocumentData, Firestore, Query, QueryDocumentSnapshot } from '@google-cloud/firestore';
import { DeliveryRecord } from '../../../domain/retry/delivery';
import { DeliveryLogQuery, inLog, logOrder } from '../../../domain/stats/delivery-log';
import { GROUP_SPAN_MS, groupKeysOf } from '../../../domain/delivery/grouped-outcomes';
import { chunks, type OperationCounter } from '../stores';
import { StoredGroup, unpackGroup } from './stored-group';

/** Firestore's `array-contains-any` takes at most 30 values. */
const ANY_LIMIT = 30;
/** Lookups of group copies asked together in one query (DeliveryGroupReads.copies). */
interface CopiesWaiting {
  ids: Set<string>;
  keys: Set<string>;
  callers: { ids: readonly string[]; resolve: (found: Map<string, DeliveryRecord[]>) => void; reject: (e: unknown) => void }[];
  asked?: true;
}

/** Groups read per query of a log page. */
const LOG_GROUP_PAGE = 20;

/**
 * The reads of delivery groups (FirestoreDeliveryGroups, delivery-groups.ts writes them): the
 * copies of deliveries by id, a destination's log, the members of groups named, and those from
 * intake batches.
 */
export class DeliveryGroupReads {
  constructor(
    protected readonly db: Firestore,
    protected readonly ops: OperationCounter,
    private readonly fromDoc: (doc: DocumentData) => DeliveryRecord,
    readonly collection: string,
  ) {}

  protected get col() {
    return this.db.collection(this.collection);
  }

  private membersOf(doc: { data(): DocumentData | undefined }): DeliveryRecord[] {
    const group = doc.data() as StoredGroup;
    return (group.packed ? unpackGroup(group.packed) : (group.members ?? []).map((m) => ({ ...group.common, ...m }))).map((m) => this.fromDoc(m));
  }

  /** Lookups waiting to be asked together (copies). */
  private waiting: CopiesWaiting | undefined;

  /**
   * Every group copy of each of `ids` (a queried read per group found, one at least per 15 ids:
   * each is asked for by key and whole). Lookups of a few ids made at once (a bundle's resent
   * members, each read before its first send; several pushes arriving together) share one
   * query, up to its 30 values: Firestore bills each query a read at least, and the emulator
   * scans the whole collection for each.
   */
  copies(ids: readonly string[]): Promise<Map<string, DeliveryRecord[]>> {
    const keys = groupKeysOf([...new Set(ids)]);
    if (keys.length >= ANY_LIMIT) return this.copiesNow(ids);
    return new Promise((resolve, reject) => {
      let w = this.waiting;
      if (w && new Set([...w.keys, ...keys]).size > ANY_LIMIT) {
        this.askWaiting(w);
        w = undefined;
      }
      if (!w) {
        const opened: CopiesWaiting = { ids: new Set(), keys: new Set(), callers: [] };
        w = this.waiting = opened;
        // Those that ask in this turn of the event loop go together.
        setImmediate(() => this.askWaiting(opened));
      }
      for (const id of ids) w.ids.add(id);
      for (const k of keys) w.keys.add(k);
      w.callers.push({ ids, resolve, reject });
    });
  }

  private askWaiting(w: CopiesWaiting): void {
    if (this.waiting === w) this.waiting = undefined;
    if (w.asked) return;
    w.asked = true;
    this.copiesNow([...w.ids]).then(
      (found) => {
        for (const c of w.callers) c.resolve(new Map(c.ids.flatMap((id) => (found.has(id) ? [[id, found.get(id)!] as const] : []))));
      },
      (e: unknown) => {
        for (const c of w.callers) c.reject(e);
      },
    );
  }

  private async copiesNow(ids: readonly string[]): Promise<Map<string, DeliveryRecord[]>> {
    const wanted = new Set(ids);
    const found = new Map<string, DeliveryRecord[]>();
    const parts = chunks(groupKeysOf([...wanted]), ANY_LIMIT);
    const snaps = await Promise.all(parts.map((part) => this.col.where('ids', 'array-contains-any', part).get()));
    const seen = new Set<string>();
    for (const snap of snaps) {
      this.ops.reads += Math.max(1, snap.size);
      for (const doc of snap.docs) {
        // A group holding ids of two parts comes in both answers: its members count once.
        if (seen.has(doc.id)) continue;
        seen.add(doc.id);
        for (const m of this.membersOf(doc)) if (wanted.has(m.id)) found.set(m.id, [...(found.get(m.id) ?? []), m]);
      }
    }
    return found;
  }

  /**
   * The destination's group members in its log (`query`, its cursor included), in log order,
   * every copy of each: all that could be among the log's first `want` rows, given the publish
   * times of the rows from its own documents (`ownTimes`). Groups are read newest first by their
   * oldest member; one whose oldest is more than a span before the `want`-th row found holds
   * nothing newer than it, nor does any after. Every copy of a delivery was published within the
   * same span, so the copies of every row that could be on the page are among those read.
   */
  async logMembers(destinationId: string, query: Omit<DeliveryLogQuery, 'limit'>, want: number, ownTimes: readonly string[] = []): Promise<DeliveryRecord[]> {
    if (query.status !== undefined && query.status !== 'DELIVERED') return [];
    const keep = (m: DeliveryRecord) => m.destinationId === destinationId && inLog(m, query);
    if (query.eventId !== undefined) {
      // An event id names a group or two: the other filters are applied to their members here.
      const snap = await this.col.where('eventIds', 'array-contains-any', groupKeysOf([query.eventId])).get();
      this.ops.reads += Math.max(1, snap.size);
      return snap.docs.flatMap((d) => this.membersOf(d)).filter(keep).sort(logOrder);
    }
    const upper = [query.cursor?.publishedAt, query.to].filter((v): v is string => v !== undefined).sort()[0];
    let q: Query = this.col.where('destinations', 'array-contains', destinationId);
    // A member at the cursor's time with a smaller id is still after it: `<=`.
    if (upper !== undefined) q = q.where('oldest', '<=', upper);
    q = q.orderBy('oldest', 'desc').limit(LOG_GROUP_PAGE);
    const floor = query.from;
    const found: DeliveryRecord[] = [];
    let last: QueryDocumentSnapshot | undefined;
    for (;;) {
      const snap = await (last ? q.startAfter(last) : q).get();
      this.ops.reads += Math.max(1, snap.size);
      for (const doc of snap.docs) found.push(...this.membersOf(doc).filter(keep));
      found.sort(logOrder);
      if (snap.size < LOG_GROUP_PAGE) return found;
      last = snap.docs[snap.docs.length - 1]!;
      const lastOldest = (last.data() as StoredGroup).oldest;
      // Every later group began at or before `lastOldest` and spans less than GROUP_SPAN_MS.
      const laterNewest = new Date(Date.parse(lastOldest) + GROUP_SPAN_MS).toISOString();
      if (floor !== undefined && laterNewest < floor) return found;
      const seen = new Set<string>();
      const times = [...ownTimes, ...found.filter((m) => !seen.has(m.id) && seen.add(m.id)).map((m) => m.publishedAt ?? '')].sort().reverse();
      const wanted = times[want - 1];
      if (wanted !== undefined && laterNewest < wanted) return found;
    }
  }

  /** Members of the groups named (read by document id: a read each), by delivery id. */
  async byGroup(docIds: readonly string[]): Promise<Map<string, DeliveryRecord[]>> {
    const found = new Map<string, DeliveryRecord[]>();
    const unique = [...new Set(docIds)];
    if (unique.length === 0) return found;
    const snaps = await this.db.getAll(...unique.map((id) => this.col.doc(id)));
    this.ops.reads += unique.length;
    for (const snap of snaps) {
      if (!snap.exists) continue;
      for (const m of this.membersOf(snap)) found.set(m.id, [...(found.get(m.id) ?? []), m]);
    }
    return found;
  }

  /** The group members that came from these intake batches (one queried read per group, at least one per 30 batches). */
  async fromIntakes(intakes: readonly string[]): Promise<DeliveryRecord[]> {
    const wanted = new Set(intakes);
    const snaps = await Promise.all(chunks([...wanted], ANY_LIMIT).map((part) => this.col.where('intakes', 'array-contains-any', part).get()));
    const seen = new Set<string>();
    const out: DeliveryRecord[] = [];
    for (const snap of snaps) {
      this.ops.reads += Math.max(1, snap.size);
      for (const doc of snap.docs) {
        if (seen.has(doc.id)) continue;
        seen.add(doc.id);
        out.push(...this.membersOf(doc).filter((m) => m.intake !== undefined && wanted.has(m.intake)));
      }
    }
    return out;
  }
}
