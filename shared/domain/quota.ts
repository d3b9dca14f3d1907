import type { Account, AccountQuotas } from './account';
import { DEFAULT_ACCOUNT } from './ids';

/**
 * Per-account quotas, the pure part. The publish rate is counted in one-second windows shared
 * by every ingest instance: each instance takes a slice of the window's allowance from the
 * account's window document (one transaction per slice) and spends it locally, so an account
 * publishing far past its quota costs one document write per slice, not one per event, and
 * the rest of its requests are refused without any I/O until the window turns.
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
 * How much an instance takes at once: a quarter of a second's quota. Few takes (a saturated
 * account writes its bucket about 4 times a second, within Firestore's guidance for one
 * document), and little held idle in any one instance.
 */
export function sliceOf(limit: number): number {
  return Math.max(1, Math.ceil(limit / 4));
}

/** Tokens an instance holds but has not spent are given up after this: a quiet instance does not sit on its account's quota. */
export const HELD_TOKENS_MS = 5_000;

/** One instance's allowance of one account. */
export interface Allowance {
  tokens: number;
  /** The held tokens are void after this (epoch ms). */
  validUntil: number;
  /** The bucket was found empty: refuse without asking until then (epoch ms). */
  emptyUntil?: number;
}

export type AdmitStep =
  | { kind: 'admit'; allowance: Allowance; prefetch: boolean }
  | { kind: 'take'; want: number; allowance: Allowance }
  | { kind: 'refuse'; allowance: Allowance; why: 'spent' | 'too-big'; retryAfterMs: number };

/**
 * What to do with `n` events against `limit`/s, given what this instance holds: spend what it
 * holds (taking the next slice ahead, unawaited, once below half a slice), take a slice and
 * wait for it, or refuse without any I/O while the bucket is known to be empty.
 */
export function admitStep(held: Allowance | undefined, n: number, limit: number, nowMs: number): AdmitStep {
  const allowance: Allowance = held && held.validUntil > nowMs ? { ...held } : { tokens: 0, validUntil: nowMs + HELD_TOKENS_MS, ...(held?.emptyUntil !== undefined ? { emptyUntil: held.emptyUntil } : {}) };
  if (n > limit) return { kind: 'refuse', allowance, why: 'too-big', retryAfterMs: 1000 };
  if (allowance.tokens >= n) {
    const tokens = allowance.tokens - n;
    return { kind: 'admit', allowance: { ...allowance, tokens }, prefetch: tokens < sliceOf(limit) / 2 && !(allowance.emptyUntil !== undefined && allowance.emptyUntil > nowMs) };
  }
  if (allowance.emptyUntil !== undefined && allowance.emptyUntil > nowMs) return { kind: 'refuse', allowance, why: 'spent', retryAfterMs: allowance.emptyUntil - nowMs };
  return { kind: 'take', want: Math.max(n - allowance.tokens, sliceOf(limit)), allowance };
}

/** Adds a take's tokens; an empty bucket (less than asked) is not asked again until a slice has refilled. */
export function afterTake(allowance: Allowance, want: number, granted: number, limit: number, nowMs: number): Allowance {
  const next: Allowance = { tokens: allowance.tokens + granted, validUntil: nowMs + HELD_TOKENS_MS };
  if (granted < want) next.emptyUntil = nowMs + Math.ceil(((want - granted) * 1000) / limit);
  return next;
}

/** Whole seconds for Retry-After (at least 1). */
export function retryAfterSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}
