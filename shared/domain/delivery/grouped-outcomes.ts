import { createHash } from 'node:crypto';
import type { DeliveryRecord } from '../retry/delivery';

/**
 * Outcomes committed in groups (docs/delivery-guarantees.md, decision 1 of issue 33): a first
 * attempt that ended DELIVERED is not a document of its own but a member of a group, one
 * document holding every outcome an instance committed together. The group is written once
 * and never changed; it is created without a read, so nothing checks that the delivery is not
 * recorded already. One delivery may then be found in several places: its own document (a
 * failed attempt's, a queued one's, or one an operator's change wrote) and group members (a
 * push redelivered after its ack was lost, on a Pub/Sub that does not say it is a redelivery).
 * These rules say which stands, the same in every view.
 */

/** Limits of one group document: Firestore's is 1 MiB, and every view reads groups whole. */
export const GROUP_LIMITS = { members: 500, bytes: 512 * 1024 };

/**
 * How long a delivered batch's outcomes wait for others to share their group commit: a busy
 * destination's next batch ends within it, and two batches then cost one write. (500 ms made it
 * four or five, −0.001 writes an event in the batched bench, but a kill then caught twice the
 * batches unrecorded: 233 duplicates against 83 outside the slow receiver in `chaos --batched`.) It delays
 * only the batch lane's ack (the events were received), and what a crash meanwhile loses
 * is a batch sent again, never an event.
 */
export const BATCH_OUTCOME_LINGER_MS = 250;

/**
 * How long a bundle's delivered outcomes (one request's events for a destination, one push) may
 * wait for the rest of the bundle to share their group commit: the push is acked only once every
 * member is recorded anyway, so waiting for the last costs nothing, and a bundle paced by its
 * destination's rate becomes a write or two, not one per event. The wait ends as soon as every
 * member has its outcome; this caps it when some member waits long for its rate turn.
 */
export const BUNDLE_OUTCOME_LINGER_MS = 2000;

/**
 * How long a lone success (no linger of its own) may wait for company when outcomes have been
 * coming close together: twice their recent mean gap, at most this. Sparse destinations' pushes
 * (one event each, across many lanes) end tens of milliseconds apart and rarely overlap, so each
 * went alone, a write apiece (0.79 writes per event in the sparse bench); waiting a gap or two
 * lets two or three share one. It delays only the push's ack, never a delivery; a quiet Herald
 * (no recent outcomes) waits for nothing.
 */
export const PACE_LINGER_MS = 50;
/** The recent outcomes the pace is judged on, and how old they may be. */
export const PACE_SAMPLE = 8;
export const PACE_WINDOW_MS = 1000;

/**
 * The wait for company a lone success is given (PACE_LINGER_MS), from when the last outcomes
 * were added (epoch ms, oldest first, this one last): none unless at least three came within the
 * window, close enough that another is due within the cap.
 */
export function paceLingerMs(recent: readonly number[], now: number): number {
  const within = recent.filter((t) => t > now - PACE_WINDOW_MS);
  if (within.length < 3) return 0;
  const gap = (within[within.length - 1]! - within[0]!) / (within.length - 1);
  return gap > PACE_LINGER_MS ? 0 : Math.min(PACE_LINGER_MS, Math.ceil(2 * gap));
}

/**
 * A group's members were published within one such span (a commit splits by it): a log page,
 * reading groups by their oldest member, knows where no later group can hold a newer one.
 */
export const GROUP_SPAN_MS = 1000;

/**
 * What stands when a delivery is found in its own document (`own`) and as group members:
 * - its own document, when there is one: written after (an operator's change, a retry that
 *   started before the group's copy was seen) or holding work (a retry scheduled, QUEUED),
 *   and the group's copy was a send made beside it (at-least-once). A DELIVERED one counts
 *   the group copies it has not folded in (`groupCopies`) as duplicates;
 * - else the earliest group member, each later copy a duplicate.
 */
export function standing(own: (DeliveryRecord & { groupCopies?: number }) | undefined, grouped: readonly DeliveryRecord[]): DeliveryRecord | undefined {
  if (own) {
    const { groupCopies = 0, ...record } = own;
    const extra = grouped.slice(groupCopies);
    return record.status === 'DELIVERED' && extra.length > 0 ? withDuplicates(record, extra) : record;
  }
  if (grouped.length === 0) return undefined;
  const [first, ...later] = byAttempt(grouped);
  return later.length > 0 ? withDuplicates(first!, later) : first;
}

function byAttempt(records: readonly DeliveryRecord[]): DeliveryRecord[] {
  return [...records].sort((a, b) => (a.lastAttemptAt ?? '').localeCompare(b.lastAttemptAt ?? ''));
}

/** `record` with `copies` counted as duplicates, the last seen when the latest of them was sent. */
function withDuplicates(record: DeliveryRecord, copies: readonly DeliveryRecord[]): DeliveryRecord {
  const latest = byAttempt(copies).pop()?.lastAttemptAt;
  const lastAt = [record.duplicates?.lastAt, latest].filter((t): t is string => t !== undefined).sort().pop();
  return { ...record, duplicates: { count: (record.duplicates?.count ?? 0) + copies.length, lastAt: lastAt ?? '' } };
}

/**
 * A grouped record's entry in its destination's log head (domain/delivery/recent-log.ts): its id and
 * the groups that hold it, so the console's first page reads it by document id, never by a
 * query. `~` is in no delivery id nor group id (destination ids, event keys and a group's
 * writer part do not use it). One delivery may be recorded more than once (a copy alone and
 * one in a group, or two groups: a redelivery sent again): its entries are merged into one
 * (`mergedHeadEntryId`), so the head names each delivery once, with every copy it knows of.
 */
export function headEntryId(deliveryId: string, ...groups: (string | undefined)[]): string {
  const named = [...new Set(groups.filter((g): g is string => g !== undefined && g !== ''))];
  return [deliveryId, ...named].join('~');
}

export function parseHeadEntryId(text: string): { id: string; groups: string[] } {
  const [id, ...groups] = text.split('~');
  return { id: id!, groups: groups.filter((g) => g !== '') };
}

/** Two entries of one delivery as one, naming the groups of both (undefined: not the same delivery). */
export function mergedHeadEntryId(a: string, b: string): string | undefined {
  const [x, y] = [parseHeadEntryId(a), parseHeadEntryId(b)];
  return x.id === y.id ? headEntryId(x.id, ...x.groups, ...y.groups) : undefined;
}

/** The delivery an entry names. */
export function headEntryDelivery(text: string): string {
  const cut = text.indexOf('~');
  return cut < 0 ? text : text.slice(0, cut);
}

/**
 * Firestore's limits on one commit: 500 writes and a 10 MiB request. Bytes are kept well below
 * (what `commitsOf` is given is an estimate of each document's stored size; the request adds
 * names and framing).
 */
export const COMMIT_LIMITS = { writes: 500, bytes: 8 * 1024 * 1024 };

/**
 * Groups to write, by their size in bytes, cut into commits each within `limits`, in order (the
 * indexes of each commit's groups). A queue of any size commits: one commit taking it whole would
 * fail every time past either limit, and every outcome in it with it. A group larger than the
 * byte limit by itself (GROUP_LIMITS keeps every one far below) goes alone.
 */
export function commitsOf(sizes: readonly number[], limits: { writes: number; bytes: number } = COMMIT_LIMITS): number[][] {
  const commits: number[][] = [];
  let current: number[] = [];
  let bytes = 0;
  sizes.forEach((size, i) => {
    if (current.length > 0 && (current.length >= limits.writes || bytes + size > limits.bytes)) {
      commits.push(current);
      current = [];
      bytes = 0;
    }
    current.push(i);
    bytes += size;
  });
  if (current.length > 0) commits.push(current);
  return commits;
}

/**
 * A record written to its own document over what stood in groups: it carries how many group
 * copies it folded in, so that they are not counted as duplicates again.
 */
export function ownOver(record: DeliveryRecord, grouped: readonly DeliveryRecord[]): DeliveryRecord & { groupCopies?: number } {
  return grouped.length > 0 ? { ...record, groupCopies: grouped.length } : record;
}

/**
 * What a group's `ids` / `eventIds` hold for a member's delivery id or event id: the value
 * itself when short, else the first 8 characters of its SHA-256 (base64url, 48 bits). Each is
 * an index entry kept for the whole retention (~120 bytes besides the value), and a delivery
 * id is ~40 characters: a key instead takes a third off a grouped record's storage. A lookup
 * by key may find a group holding another value with the same key (1 in 2^48 per member): its
 * members are matched exactly after the read.
 */
export function groupKey(value: string): string {
  return value.length <= GROUP_KEY_LENGTH ? value : createHash('sha256').update(value).digest('base64url').slice(0, GROUP_KEY_LENGTH);
}

const GROUP_KEY_LENGTH = 8;

/** Every value a lookup of `values` asks a group's array for: each key, and each value whole (groups written before keys hold those). */
export function groupKeysOf(values: readonly string[]): string[] {
  return [...new Set(values.flatMap((v) => [groupKey(v), v]))];
}
