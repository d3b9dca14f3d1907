/**
 * A meter on Herald's Firestore client: every RPC the client sends goes through
 * `Firestore.prototype.request` (unary: commit, batchWrite, listDocuments…) or
 * `requestStream` (batchGetDocuments, runQuery, runAggregationQuery), so wrapping those two
 * sees what Firestore bills, per collection, whatever store or code path sent it — the
 * stores' own OperationCounter is what they say they did; this is what went to the server.
 *
 * Counted as Firestore bills (https://cloud.google.com/firestore/pricing):
 *   - a document returned by a get (in a transaction or not) is one read, a missing one too;
 *   - a query bills one read per document returned, and one read when it returns none;
 *   - a count aggregation bills one read per 1,000 index entries counted, at least one;
 *   - a committed write (set, update, create, a transform) is one write, a delete one delete
 *     (a failed commit bills nothing);
 *   - beginTransaction, rollback and listen's target changes are not counted (listen is not
 *     used on the delivery path; its documents would bill, and are counted under `unmetered`).
 * The pure part (what a request and its responses bill) is separate from the patching, so it
 * can be tested without a Firestore (test/unit/bench-firestore-meter.test.ts).
 */
import { Firestore } from '@google-cloud/firestore';

export interface Ops {
  reads: number;
  writes: number;
  deletes: number;
}

/** Billed operations by collection path (`deliveries`, `accounts/keys` for a subcollection). */
export type OpsByCollection = Record<string, Ops>;

/** `projects/p/databases/d/documents/a/x/b/y` → `a/b`: the collection ids, without document ids. */
export function collectionOfName(name: string): string {
  const at = name.indexOf('/documents/');
  const path = at >= 0 ? name.slice(at + '/documents/'.length) : name;
  return path
    .split('/')
    .filter((_, i) => i % 2 === 0)
    .join('/');
}

interface WriteProto {
  update?: { name?: string } | null;
  delete?: string | null;
  transform?: { document?: string } | null;
}
interface QueryRequest {
  parent?: string;
  structuredQuery?: { from?: { collectionId?: string }[] | null } | null;
  structuredAggregationQuery?: { structuredQuery?: { from?: { collectionId?: string }[] | null } | null; aggregations?: { alias?: string | null; count?: object | null; sum?: object | null }[] | null } | null;
}
interface StreamChunk {
  found?: { name?: string } | null;
  missing?: string | null;
  document?: { name?: string } | null;
  result?: { aggregateFields?: Record<string, { integerValue?: number | string | null } | undefined> | null } | null;
}

/** The collection a query asks (its parent's path plus its `from`). */
function queryCollection(request: QueryRequest): string {
  const from = request.structuredQuery?.from ?? request.structuredAggregationQuery?.structuredQuery?.from;
  const id = from?.[0]?.collectionId ?? '?';
  const parent = request.parent ? collectionOfName(`${request.parent}/x`) : '';
  // collectionOfName of `…/documents/x` is `x`; of `…/documents/a/doc/x` is `a/x`.
  return parent === 'x' || parent === '' ? id : `${parent.slice(0, -2)}/${id}`;
}

export class FirestoreMeter {
  readonly byCollection: OpsByCollection = {};
  /** RPCs by method name that the meter does not turn into billed operations. */
  readonly unmetered: Record<string, number> = {};

  add(collection: string, kind: keyof Ops, n = 1): void {
    const ops = (this.byCollection[collection] ??= { reads: 0, writes: 0, deletes: 0 });
    ops[kind] += n;
  }

  /** A unary RPC that succeeded. */
  unary(method: string, request: { writes?: WriteProto[] | null } | undefined, response: unknown): void {
    if (method === 'commit' || method === 'batchWrite') {
      for (const w of request?.writes ?? []) {
        if (w.update?.name) this.add(collectionOfName(w.update.name), 'writes');
        else if (w.delete) this.add(collectionOfName(w.delete), 'deletes');
        else if (w.transform?.document) this.add(collectionOfName(w.transform.document), 'writes');
      }
    } else if (method === 'listDocuments') {
      const docs = (response as { documents?: { name?: string }[] } | undefined)?.documents ?? [];
      for (const d of docs) if (d.name) this.add(collectionOfName(d.name), 'reads');
    } else if (method !== 'beginTransaction' && method !== 'rollback') {
      this.unmetered[method] = (this.unmetered[method] ?? 0) + 1;
    }
  }

  /** A streaming RPC: call `chunk` with each response and `end` once it ended. */
  stream(method: string, request: QueryRequest): { chunk: (c: StreamChunk) => void; end: () => void } {
    if (method === 'batchGetDocuments') {
      return {
        chunk: (c) => {
          const name = c.found?.name ?? c.missing;
          if (name) this.add(collectionOfName(name), 'reads');
        },
        end: () => undefined,
      };
    }
    if (method === 'runQuery') {
      let documents = 0;
      const collection = queryCollection(request);
      return {
        chunk: (c) => {
          if (c.document?.name) {
            documents++;
            this.add(collectionOfName(c.document.name), 'reads');
          }
        },
        end: () => {
          if (documents === 0) this.add(collection, 'reads');
        },
      };
    }
    if (method === 'runAggregationQuery') {
      const collection = queryCollection(request);
      let counted = false;
      return {
        chunk: (c) => {
          const fields = c.result?.aggregateFields;
          if (!fields) return;
          counted = true;
          // The entries scanned are what a count says; a sum beside it (the reconciler's tally) scans
          // the same entries and its value is no count. A request that names no aggregations: every field is one.
          const counts = request.structuredAggregationQuery?.aggregations?.filter((a) => a.count).map((a) => a.alias);
          const entries = Math.max(0, ...Object.entries(fields).filter(([alias]) => counts === undefined || counts.includes(alias)).map(([, f]) => Number(f?.integerValue ?? 0)));
          this.add(collection, 'reads', Math.max(1, Math.ceil(entries / 1000)));
        },
        end: () => {
          if (!counted) this.add(collection, 'reads');
        },
      };
    }
    this.unmetered[method] = (this.unmetered[method] ?? 0) + 1;
    return { chunk: () => undefined, end: () => undefined };
  }
}

/** Sums every collection's operations. */
export function totalOps(by: OpsByCollection): Ops {
  const t: Ops = { reads: 0, writes: 0, deletes: 0 };
  for (const o of Object.values(by)) {
    t.reads += o.reads;
    t.writes += o.writes;
    t.deletes += o.deletes;
  }
  return t;
}

type RequestFn = (method: string, request: unknown, tag: string, retryCodes?: number[]) => Promise<unknown>;
type StreamFn = (method: string, bidirectional: boolean, request: unknown, tag: string) => Promise<NodeJS.ReadableStream>;

/**
 * Patches the Firestore class (every client in this process) to report to `meter`. The two
 * methods are internal to @google-cloud/firestore (7.x): if a release renames them this
 * throws, rather than counting nothing.
 */
export function meterFirestore(meter: FirestoreMeter, cls: typeof Firestore = Firestore): void {
  const proto = cls.prototype as unknown as { request?: RequestFn; requestStream?: StreamFn };
  const request = proto.request;
  const requestStream = proto.requestStream;
  if (typeof request !== 'function' || typeof requestStream !== 'function') throw new Error('@google-cloud/firestore has no Firestore.prototype.request/requestStream to meter');
  proto.request = async function (this: unknown, method, req, tag, retryCodes) {
    const response = await request.call(this, method, req, tag, retryCodes);
    meter.unary(method, req as { writes?: WriteProto[] }, response);
    return response;
  };
  proto.requestStream = async function (this: unknown, method, bidirectional, req, tag) {
    const stream = await requestStream.call(this, method, bidirectional, req, tag);
    if (method === 'listen') {
      meter.unary('listen', undefined, undefined);
      return stream;
    }
    // The stream comes back paused: a 'data' listener sees each response however the caller
    // reads it (flowing or read()), without resuming it early.
    const m = meter.stream(method, req as QueryRequest);
    stream.on('data', (c: StreamChunk) => m.chunk(c));
    stream.once('end', () => m.end());
    return stream;
  };
}

/** What each collection holds, for the reader of the tables (shared/adapters COLLECTIONS). */
export const COLLECTION_LABELS: Record<string, string> = {
  destinations: 'registry (destinations)',
  'destination-changes': 'destination change log',
  'rate-control': 'rate-control leases',
  rates: 'success-rate counters',
  'rates-shared': 'success-rate counters of sparse destinations, many to a document',
  'event-types': 'event-type samples',
  intake: 'intake journal',
  deliveries: 'delivery records of their own (retries, queued, dead)',
  'delivery-groups': 'DELIVERED first attempts, many to a document',
  'publish-quotas': 'publish quotas',
  accounts: 'accounts',
  'account-keys': 'account keys',
  'account-tombstones': 'account tombstones (is the account deleted?)',
  replays: 'replays',
  'portal-links': 'portal links',
  'portal-sessions': 'portal sessions',
  locks: 'locks',
  'lane-marks': 'lanes seen behind (for the reconciler)',
};

/** Per event: every figure of `by` divided by `events`. */
export function perEvent(by: OpsByCollection, events: number): OpsByCollection {
  if (events <= 0) return {};
  return Object.fromEntries(Object.entries(by).map(([c, o]) => [c, { reads: o.reads / events, writes: o.writes / events, deletes: o.deletes / events }]));
}

/** `after − before`, every collection of either. */
export function opsDelta(after: OpsByCollection, before: OpsByCollection): OpsByCollection {
  const out: OpsByCollection = {};
  for (const c of new Set([...Object.keys(after), ...Object.keys(before)])) {
    const a = after[c] ?? { reads: 0, writes: 0, deletes: 0 };
    const b = before[c] ?? { reads: 0, writes: 0, deletes: 0 };
    const d = { reads: a.reads - b.reads, writes: a.writes - b.writes, deletes: a.deletes - b.deletes };
    if (d.reads || d.writes || d.deletes) out[c] = d;
  }
  return out;
}

const fmt = (v: number) => (v === 0 ? '0' : v.toFixed(v < 0.1 ? 3 : 2));

/**
 * Reads / writes / deletes per event, one row per collection (the busiest first), one column
 * per run: `columns` hold figures already per event.
 */
export function collectionTable(columns: { name: string; perEvent: OpsByCollection }[]): { header: string[]; rows: string[][] } {
  const weight = (c: string) => columns.reduce((s, col) => s + (col.perEvent[c]?.reads ?? 0) + (col.perEvent[c]?.writes ?? 0) * 3, 0);
  const collections = [...new Set(columns.flatMap((c) => Object.keys(c.perEvent)))].sort((x, y) => weight(y) - weight(x));
  const cell = (o: Ops | undefined) => (o ? `${fmt(o.reads)} / ${fmt(o.writes)} / ${fmt(o.deletes)}` : '—');
  return {
    header: ['Firestore per event: reads / writes / deletes', ...columns.map((c) => c.name)],
    rows: [
      ...collections.map((c) => [`${c}${COLLECTION_LABELS[c] ? ` — ${COLLECTION_LABELS[c]}` : ''}`, ...columns.map((col) => cell(col.perEvent[c]))]),
      ['ALL', ...columns.map((col) => cell(totalOps(col.perEvent)))],
    ],
  };
}
