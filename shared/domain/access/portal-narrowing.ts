import type { Caller } from './account';

/**
 * What a portal session narrowed to some destinations may write (docs/console.md "What a portal
 * session may do"). It may change its destinations, but it must not take events that went only
 * to the account's other destinations: so it creates none (a new one would subscribe to
 * anything), and it may keep or narrow a destination's `eventTypes`, never widen them. The URL
 * or topic is its own to change: it sends there only what the destination takes. Pure.
 */

/**
 * Whether pattern `wide` takes every type `narrow` takes: the same pattern, or `wide` a
 * wildcard (`com.example.*`, `*`) whose prefix starts `narrow` (domain/events/event.ts matchesType).
 */
function covers(wide: string, narrow: string): boolean {
  return wide === narrow || (wide.endsWith('*') && narrow.startsWith(wide.slice(0, -1)));
}

/** The patterns of `next` that take a type `current` does not (an empty list takes every type). */
export function typesBeyond(current: readonly string[], next: readonly string[]): string[] {
  if (current.length === 0) return [];
  if (next.length === 0) return ['every type (eventTypes left out or empty)'];
  return next.filter((n) => !current.some((c) => covers(c, n)));
}

export type NarrowedWrite = { ok: true } | { ok: false; error: string; issues: { path: string; message: string }[] };

const OK: NarrowedWrite = { ok: true };

/**
 * Whether `caller` may write destination `id` (its id in the account) with `nextEventTypes`,
 * given what is stored now (`current`, undefined when there is none). Anyone but a narrowed
 * portal session may: its account's key, the operator, an un-narrowed session (which sees
 * every destination of the account anyway).
 */
export function narrowedWrite(caller: Caller, id: string, current: { eventTypes: readonly string[] } | undefined, nextEventTypes: readonly string[]): NarrowedWrite {
  if (caller.kind !== 'portal' || caller.destinations === undefined) return OK;
  if (current === undefined) {
    return {
      ok: false,
      error: `this portal session cannot create destination ${JSON.stringify(id)}: a session narrowed to some destinations changes those alone, and creates none; ask whoever gave you the portal link`,
      issues: [{ path: 'id', message: 'a narrowed portal session creates no destination' }],
    };
  }
  const beyond = typesBeyond(current.eventTypes, nextEventTypes);
  if (beyond.length === 0) return OK;
  const had = current.eventTypes.map((t) => JSON.stringify(t)).join(', ');
  return {
    ok: false,
    error: `this portal session cannot widen the event types of destination ${JSON.stringify(id)}: it takes ${had}, and ${beyond.map((t) => (t.startsWith('every') ? t : JSON.stringify(t))).join(', ')} would take more; give eventTypes within those (the same, or narrower), or ask whoever gave you the portal link`,
    issues: [{ path: 'eventTypes', message: `must stay within ${had}` }],
  };
}
