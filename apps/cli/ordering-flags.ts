import { ORDERING_FAILURE_MODES, OrderingSpec } from '../../shared/domain/modes/ordering';
import { Issue } from './errors';

/**
 * `destinations add --ordering key [--ordering-on-failure skip|block]`: the destination's
 * `ordering` (shared/domain/modes/ordering.ts), each problem named by its flag.
 */

export interface OrderingFlags {
  ordering?: string;
  orderingOnFailure?: string;
}

const FLAG = { ordering: '--ordering', onFailure: '--ordering-on-failure' } as const;

export const ORDERING_FLAG_HELP = {
  ordering: 'key: events with the same partitionkey are sent one at a time, in the order Herald accepted them',
  onFailure: `with ${FLAG.ordering} key, when a key's event ends DEAD or QUEUED: skip (move on to the next, the default) or block (hold the key until an operator acts)`,
};

/** The flags' `ordering`, undefined when none is given (unordered); or every problem, by flag. */
export function orderingFromFlags(flags: OrderingFlags): { ok: true; ordering?: OrderingSpec } | { ok: false; issues: Issue[] } {
  const issues: Issue[] = [];
  if (flags.ordering !== undefined && flags.ordering !== 'key') {
    issues.push({ path: FLAG.ordering, message: 'takes one value, key: events are ordered per partitionkey (leave the flag out for no ordering)' });
  }
  const onFailure = flags.orderingOnFailure;
  if (onFailure !== undefined && !(ORDERING_FAILURE_MODES as readonly string[]).includes(onFailure)) {
    issues.push({ path: FLAG.onFailure, message: `must be ${ORDERING_FAILURE_MODES.map((m) => JSON.stringify(m)).join(' or ')}` });
  } else if (onFailure !== undefined && flags.ordering === undefined) {
    issues.push({ path: FLAG.onFailure, message: `is only meaningful with ${FLAG.ordering} key: add it, or leave both out for no ordering` });
  }
  if (issues.length > 0) return { ok: false, issues };
  if (flags.ordering === undefined) return { ok: true };
  return { ok: true, ordering: { by: 'key', onFailure: (onFailure ?? 'skip') as OrderingSpec['onFailure'] } };
}

/** A batch and an order cannot both be asked for: said before sending, in the flags' words. */
export function orderingWithBatch(): Issue {
  return { path: FLAG.ordering, message: 'cannot go with the --batch-* flags: a batch is sent as a unit, an ordered key one event at a time; choose one' };
}

/** "key, skip" / "key, block", or "-" when unordered: a table cell. */
export function orderingCell(ordering: OrderingSpec | undefined): string {
  return ordering ? `${ordering.by}, ${ordering.onFailure}` : '-';
}

/** What `destinations show` says of the setting. */
export function orderingSentence(ordering: OrderingSpec): string {
  const then =
    ordering.onFailure === 'block'
      ? 'a key whose event ends DEAD or QUEUED is held until that event is redelivered or the key skipped (herald destinations blocked-keys)'
      : 'a key whose event ends DEAD or QUEUED moves on to its next event';
  return `events with the same partitionkey one at a time, in the order accepted; ${then}`;
}
