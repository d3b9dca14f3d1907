/**
 * Events for one destination that arrive close together in separate requests (a producer
 * sending one event a request) go onto its lane together, as one bundle (domain/intake/lane-bundle.ts):
 * one push, one invocation and one group write for them instead of one each. A destination
 * that had no event for `lingerMs` is quiet: its event goes at once, so a quiet destination
 * waits for nothing. One that had an event less than `lingerMs` ago is busy: its event waits up
 * to `lingerMs` for the others that come meanwhile (its delivery is that much later; Herald
 * answers the producer once the bundle is published).
 */
export type CoalesceStep =
  /** Publish it alone, now. */
  | { kind: 'at-once' }
  /** Open a bundle with it, published `lingerMs` from now. */
  | { kind: 'open'; publishAt: number }
  /** Add it to the bundle waiting; `full`: the bundle is full with it, publish it now. */
  | { kind: 'join'; full: boolean };

export interface CoalesceInput {
  now: number;
  /** When this destination's last event came to this instance, if it is remembered. */
  lastAt?: number;
  /** Events in the bundle waiting for this destination, if one is. */
  waiting?: number;
  lingerMs: number;
  /** Most events in one bundle. */
  limit: number;
}

export function coalesceStep(input: CoalesceInput): CoalesceStep {
  const { now, lastAt, waiting, lingerMs, limit } = input;
  if (lingerMs <= 0) return { kind: 'at-once' };
  if (waiting !== undefined && waiting > 0) return { kind: 'join', full: waiting + 1 >= limit };
  if (lastAt === undefined || now - lastAt >= lingerMs) return { kind: 'at-once' };
  return { kind: 'open', publishAt: now + lingerMs };
}
