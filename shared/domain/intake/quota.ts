import type { Account, AccountQuotas } from '../access/account';
import { DEFAULT_ACCOUNT } from '../ids';

/**
 * Per-account quotas, the pure part. The publish rate is counted in one-second windows shared
 * by every ingest instance: each instance takes a lease of the window's allowance from the
 * account's window document (one transaction per lease), sized by what it spent recently, and
 * spends it locally, so an account publishing far past its quota costs one document write per
 * slice, not one per event, and the rest of its requests are refused without any I/O until
 * the window turns.
 */

export interface QuotaDefaults {
  /** 0: none. */
  publishPerSecond: number;
  destinations: number;
}

/** What applies to the account: its own quotas, else the deployment's defaults; `default` has none unless set. Undefined: no limit. */
export function quotasOf(id: string, account: Pick<Account, 'quotas'> | undefined, defaults: QuotaDefaults): AccountQuotas {
  const own = account?.quotas ?? {};
  const fallback: AccountQuotas = id === DEFAULT_ACCOUNT ? {} : defaults;
  const pick = (key: keyof AccountQuotas) => {
    const value = own[key] ?? fallback[key];
    return value !== undefined && value > 0 ? { [key]: value } : {};
  };
  return { ...pick('publishPerSecond'), ...pick('destinations') };
}

/**
 * One account's publish bucket, as stored: a token bucket that refills at the quota and holds
 * at most one second of it, so a burst up to the quota is taken at once and no more.
 */
export interface QuotaBucket {
  tokens: number;
  /** Epoch ms of the last take. */
  at: number;
}

/** Hands out up to `want` whole tokens of the bucket, refilled since its last take. */
export function takeFromBucket(doc: QuotaBucket | undefined, want: number, limit: number, nowMs: number): { doc: QuotaBucket; granted: number } {
  const elapsed = doc ? Math.max(0, nowMs - doc.at) : Infinity;
  const refilled = Math.min(limit, (doc?.tokens ?? limit) + (elapsed * limit) / 1000);
  const granted = Math.max(0, Math.min(want, Math.floor(refilled)));
  return { doc: { tokens: refilled - granted, at: Math.max(nowMs, doc?.at ?? 0) }, granted };
}

/**
 * The most an instance takes at once: a quarter of a second's quota. A saturated account
 * writes its bucket about 4 times a second, within Firestore's guidance for one document.
 */
export function sliceOf(limit: number): number {
  return Math.max(1, Math.ceil(limit / 4));
}

/**
 * Below the slice, an instance takes what it would spend over about this long at its recent
 * rate: its tokens are spent before they lapse, and many instances sharing an account take
 * about what they publish, not a slice each (which they let lapse: 40 instances at 10 events/s
 * took 2,000 tokens/s of 1,000). The price is writes: about one take per instance per horizon,
 * more while leases grow (40 instances at 90 % of 1,000/s: 24 takes/s over the first minute, 8
 * after it; before, 63 and 38, most of them short grants, and 4 % refused), while an instance
 * past its quota still takes a slice at a time.
 */
export const LEASE_HORIZON_MS = 5_000;

/** Tokens an instance holds but has not spent are given up after this: a quiet instance does not sit on its account's quota. */
export const HELD_TOKENS_MS = 2 * LEASE_HORIZON_MS;

/** Demand is measured over at least this long, so a few events close together do not look like a flood. */
const DEMAND_FLOOR_MS = 1_000;

/** One instance's allowance of one account. */
export interface Allowance {
  tokens: number;
  /** The held tokens are void after this (epoch ms). */
  validUntil: number;
  /** The bucket was found empty: refuse without asking until then (epoch ms). */
  emptyUntil?: number;
  /** The last take's size: the next is taken ahead once fewer than half of it are left. */
  lease?: number;
  /** Events refused since a take was last granted whole. */
  refused?: number;
  /** Events admitted since `since` (epoch ms): the instance's demand being measured. */
  spent?: number;
  since?: number;
}

export type AdmitStep =
  | { kind: 'admit'; allowance: Allowance; /** Tokens to take ahead, unawaited; 0: none. */ prefetch: number }
  | { kind: 'take'; want: number; allowance: Allowance }
  | { kind: 'refuse'; allowance: Allowance; why: 'spent' | 'too-big'; retryAfterMs: number };

/** What the next take asks for: what the instance spends over LEASE_HORIZON_MS at its recent rate, from 1 to a slice. */
export function leaseOf(allowance: Allowance, limit: number, nowMs: number): number {
  // Past its quota (refusing since a take fell short), an instance takes a slice at a time and so
  // waits a slice's refill between takes: 4 a second, not a take per event however little is
  // admitted.
  if (allowance.refused) return sliceOf(limit);
  if (allowance.since === undefined) return 1;
  const window = nowMs - allowance.since;
  const perSecond = ((allowance.spent ?? 0) * 1000) / Math.max(DEMAND_FLOOR_MS, window);
  return Math.min(sliceOf(limit), Math.max(1, Math.ceil((perSecond * LEASE_HORIZON_MS) / 1000)));
}

/**
 * What to do with `n` events against `limit`/s, given what this instance holds: spend what it
 * holds (taking the next lease ahead, unawaited, once below half the last one), take and wait,
 * or refuse without any I/O while the bucket is known to be empty.
 */
export function admitStep(held: Allowance | undefined, n: number, limit: number, nowMs: number): AdmitStep {
  const allowance: Allowance =
    held && held.validUntil > nowMs
      ? { ...held }
      : {
          tokens: 0,
          validUntil: nowMs + HELD_TOKENS_MS,
          ...(held?.emptyUntil !== undefined ? { emptyUntil: held.emptyUntil } : {}),
          // Demand outlives the lapsed tokens: what was spent is still a measure of what is needed.
          ...(held?.since !== undefined ? { spent: held.spent ?? 0, since: held.since } : {}),
          ...(held?.refused ? { refused: held.refused } : {}),
        };
  if (n > limit) return { kind: 'refuse', allowance, why: 'too-big', retryAfterMs: 1000 };
  if (allowance.tokens >= n) {
    const next = { ...allowance, tokens: allowance.tokens - n, spent: (allowance.spent ?? 0) + n, since: allowance.since ?? nowMs };
    const ahead = next.tokens < (allowance.lease ?? 1) / 2 && !(allowance.emptyUntil !== undefined && allowance.emptyUntil > nowMs);
    return { kind: 'admit', allowance: next, prefetch: ahead ? leaseOf(next, limit, nowMs) : 0 };
  }
  if (allowance.emptyUntil !== undefined && allowance.emptyUntil > nowMs) {
    return { kind: 'refuse', allowance: { ...allowance, refused: (allowance.refused ?? 0) + n }, why: 'spent', retryAfterMs: allowance.emptyUntil - nowMs };
  }
  return { kind: 'take', want: Math.max(n - allowance.tokens, leaseOf(allowance, limit, nowMs)), allowance };
}

/**
 * Adds a take's tokens and starts measuring demand afresh; an empty bucket (less than asked)
 * is not asked again until what was missing has refilled.
 */
export function afterTake(allowance: Allowance, want: number, granted: number, limit: number, nowMs: number): Allowance {
  const next: Allowance = { tokens: allowance.tokens + granted, validUntil: nowMs + HELD_TOKENS_MS, lease: want, spent: 0, since: nowMs };
  // Refusals are forgotten once a take is granted whole: the account is within its quota again.
  if (granted < want && allowance.refused) next.refused = allowance.refused;
  if (granted < want) next.emptyUntil = nowMs + Math.ceil(((want - granted) * 1000) / limit);
  return next;
}

/** Whole seconds for Retry-After (at least 1). */
export function retryAfterSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}
