import { DeliveryRecord } from '../../../domain/retry/delivery';
import { GROUP_LIMITS, GROUP_SPAN_MS } from '../../../domain/delivery/grouped-outcomes';
import { jsonBytes } from '../../../domain/events/json-values';
import { splitDestinationId } from '../../../domain/ids';
import type { AddedDelivered } from '../../../ports/deliveries';

export interface Waiting {
  record: DeliveryRecord;
  /** Settles as `done` does (a failure too, so that a caller asking whether it was recorded is never left with an unhandled rejection). */
  outcome: Promise<AddedDelivered | undefined>;
  /** What became of it: created alone, or in `group`; or, alone, refused as a record had its id already. */
  done: (error?: unknown, added?: AddedDelivered) => void;
  /** When it was queued (ms). */
  at: number;
  /** Until when its commit may wait for others (ms): `at`, unless its caller let it linger. */
  due: number;
}

/**
 * Tries of one group commit, with the same group ids each time (created, never set): a try whose
 * reply was lost (DEADLINE_EXCEEDED after it landed) makes the next fail ALREADY_EXISTS, which
 * says it landed; a second group holding the same outcomes is never written.
 */
export const COMMIT_TRIES = 3;
export const COMMIT_FIRST_PAUSE_MS = 100;

/**
 * What one commit writes: the outcomes by account and by publish span (GROUP_SPAN_MS), each
 * group within GROUP_LIMITS.
 */
export function groupsOf(taken: readonly Waiting[]): { account: string; members: Waiting[] }[] {
  type Open = { account: string; members: Waiting[]; bytes: number; counted: Set<object> };
  const open = new Map<string, Open[]>();
  // What a member adds to a group: what it shares with members already there (a batch's attempt detail) is stored once.
  const adds = (group: Open, record: DeliveryRecord) => {
    const met = new Set<object>();
    const bytes = jsonBytes(record, { has: (o) => group.counted.has(o) || met.has(o), add: (o) => met.add(o) });
    return { bytes, met };
  };
  for (const waiting of taken) {
    const { record } = waiting;
    const account = splitDestinationId(record.destinationId).account;
    const span = Math.floor(Date.parse(record.publishedAt ?? record.lastAttemptAt ?? '') / GROUP_SPAN_MS);
    const key = `${account}\n${Number.isNaN(span) ? 0 : span}`;
    const list = open.get(key) ?? [];
    let group = list[list.length - 1];
    let added = group ? adds(group, record) : undefined;
    if (!group || !added || group.members.length >= GROUP_LIMITS.members || group.bytes + added.bytes > GROUP_LIMITS.bytes) {
      group = { account, members: [], bytes: 0, counted: new Set() };
      list.push(group);
      open.set(key, list);
      added = adds(group, record);
    }
    group.members.push(waiting);
    group.bytes += added.bytes;
    for (const o of added.met) group.counted.add(o);
  }
  return [...open.values()].map((list) => list.map(({ account, members }) => ({ account, members }))).flat();
}
