/**
 * The batcher's lease, as rules (app/lanes/batcher-wake.ts does the reading, writing and publishing):
 * a running batcher says until when it is sure to go on pulling; a publisher onto the batch lane
 * wakes a pump run when nobody says so. Times are milliseconds.
 */
export const BATCHER_WAKE = {
  /** How far ahead a batcher that goes on pulling for good (local mode) says it runs. */
  aliveMs: 30_000,
  /** A lease is renewed once it has less than this left, if the batcher will still be pulling after it. */
  renewWithinMs: 5_000,
  /** A publisher reads the lease at most this often. */
  lookEveryMs: 5_000,
  /** A publisher sends a wake-up at most this often (the run it starts takes a moment to say so). */
  wakeEveryMs: 20_000,
} as const;

/**
 * What a batcher writes now, given the lease it wrote last (`until`) and until when it is sure to
 * go on pulling (`horizon`; undefined: not sure at all): the new lease, or nothing. Written only
 * when the last is about to lapse and the run goes on past it: a write every few seconds while
 * events come, none while it idles.
 */
export function leaseRenewal(until: number, horizon: number | undefined, now: number): number | undefined {
  if (horizon === undefined || horizon <= until || until - now >= BATCHER_WAKE.renewWithinMs) return undefined;
  return horizon;
}

/** What a publisher knows: the latest lease it read, and when it last looked and last woke a run. */
export interface PublisherView {
  knownUntil: number;
  lookedAt: number;
  wokeAt: number;
}

export const NOTHING_SEEN: PublisherView = { knownUntil: 0, lookedAt: Number.NEGATIVE_INFINITY, wokeAt: Number.NEGATIVE_INFINITY };

/**
 * A publisher's next step after events went onto the batch lane: nothing (a batcher is known to
 * run, or a wake-up went out moments ago), a look at the lease, or a wake-up.
 */
export function publisherStep(view: PublisherView, now: number): 'nothing' | 'look' | 'wake' {
  if (now < view.knownUntil) return 'nothing';
  if (now - view.lookedAt >= BATCHER_WAKE.lookEveryMs) return 'look';
  return now - view.wokeAt >= BATCHER_WAKE.wakeEveryMs ? 'wake' : 'nothing';
}
