import { gunzipSync } from 'node:zlib';
import { DocumentData } from '@google-cloud/firestore';
import { DeliveryRecord } from '../../../domain/retry/delivery';
import { sameJson } from '../../../domain/events/json-values';
import { deliveryId } from '../../../domain/ids';
import { eventKey } from '../../../domain/events/event';

/**
 * A group as stored: its members whole (as their own documents would hold them, never with an
 * event: they are DELIVERED), and beside them the arrays and bounds its queries select by.
 * One account's members only (its id starts `<account>_`, so erasing an account erases its
 * groups by id range), published within one GROUP_SPAN_MS (a log page knows where to stop).
 *
 * A group is kept for the whole retention and billed by the byte, its index entries included:
 * `ids` and `eventIds` hold each member's short key (domain/delivery/grouped-outcomes.ts groupKey: a
 * lookup reads the few groups with the key and keeps the members that match exactly), and the
 * members travel as `packed`, one gzip of their JSON. Groups written before both hold full ids
 * and `members` / `common` as maps; every read takes either.
 */
export interface StoredGroup {
  account: string;
  ids: string[];
  eventIds: string[];
  destinations: string[];
  intakes: string[];
  /** Earliest and latest publishedAt of the members (ISO). */
  oldest: string;
  newest: string;
  committedAt: string;
  /**
   * gzip of `{members, common}` as JSON (every member's fields are JSON: a DELIVERED record holds
   * no event); a member's `id` is left out where its destination, source and event id name it.
   */
  packed?: Buffer;
  /** Each member's own fields: those in `common` left out (groups written before `packed`). */
  members?: DocumentData[];
  /**
   * The fields every member holds with the same value, once (a batch's members share their
   * destination, status, times and the attempt's detail): a group is kept for the whole
   * retention, and storage is billed by the byte.
   */
  common?: DocumentData;
  expireAt?: Date;
}

/**
 * A packed member without its delivery id when its destination, event source and event id
 * name it (they always do for a record Herald made): the id's event key is a hash, 27
 * characters no compression shortens, and a group is kept for the whole retention.
 */
export function withoutDerivedId(doc: DocumentData): DocumentData {
  const { id, ...rest } = doc;
  return typeof id === 'string' && id === derivedId(rest) ? rest : doc;
}

function withDerivedId(doc: DocumentData): DocumentData {
  if (doc.id !== undefined) return doc;
  const id = derivedId(doc);
  return id === undefined ? doc : { ...doc, id };
}

function derivedId(doc: DocumentData): string | undefined {
  const { destinationId, eventSource, eventId } = doc as { destinationId?: unknown; eventSource?: unknown; eventId?: unknown };
  if (typeof destinationId !== 'string' || typeof eventSource !== 'string' || typeof eventId !== 'string') return undefined;
  return deliveryId(destinationId, eventKey({ source: eventSource, id: eventId }));
}

/**
 * What `packed` holds: the members with what they share taken out (`compacted`) — by batch when
 * they come from several (each batch's members share their request's detail and times, which
 * members of two batches do not), else all together.
 */
type Packed = { members: DocumentData[]; common?: DocumentData } | { sections: { members: DocumentData[]; common?: DocumentData }[] };

export function packedOf(docs: readonly DocumentData[], records: readonly DeliveryRecord[]): Packed {
  const byBatch = new Map<string, DocumentData[]>();
  docs.forEach((d, i) => {
    const key = records[i]!.batch?.id ?? '';
    byBatch.set(key, [...(byBatch.get(key) ?? []), d]);
  });
  return byBatch.size < 2 ? compacted(docs) : { sections: [...byBatch.values()].map(compacted) };
}

/** A group's `packed` members, each whole (what they share put back, its delivery id too). */
export function unpackGroup(packed: Buffer): DocumentData[] {
  const read = JSON.parse(gunzipSync(packed).toString('utf8')) as Packed;
  const sections = 'sections' in read ? read.sections : [read];
  return sections.flatMap(({ members, common }) => members.map((m) => withDerivedId({ ...common, ...m })));
}

/** Members with the fields all of them share, equal, taken out into `common` (two members at least). */
export function compacted(docs: readonly DocumentData[]): { members: DocumentData[]; common?: DocumentData } {
  if (docs.length < 2) return { members: [...docs] };
  const common: DocumentData = {};
  for (const [key, value] of Object.entries(docs[0]!)) {
    if (docs.every((d) => key in d && sameJson(d[key], value))) common[key] = value;
  }
  if (Object.keys(common).length === 0) return { members: [...docs] };
  return { members: docs.map((d) => Object.fromEntries(Object.entries(d).filter(([k]) => !(k in common)))), common };
}

/**
 * A document's stored size as Firestore counts it (its name, each field's name and value:
 * a string's UTF-8 bytes + 1, bytes as they are, 8 for a number, a time or a boolean), what a
 * commit's size limit is kept below by.
 */
export function storedBytes(path: string, value: unknown): number {
  return Buffer.byteLength(path) + 16 + valueBytes(value);
}

function valueBytes(value: unknown): number {
  if (value === null || value === undefined) return 1;
  if (typeof value === 'string') return Buffer.byteLength(value) + 1;
  if (Buffer.isBuffer(value) || value instanceof Uint8Array) return value.length;
  if (typeof value !== 'object' || value instanceof Date) return 8;
  if (Array.isArray(value)) return value.reduce((sum: number, v) => sum + valueBytes(v), 0);
  return Object.entries(value).reduce((sum, [k, v]) => sum + Buffer.byteLength(k) + 1 + valueBytes(v), 0);
}
