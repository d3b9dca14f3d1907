/**
 * How often one instance lets portal links through its public door (`POST /admin/portal/sessions`,
 * docs/console.md "Opening a session"): the door takes no credential but the link, and each
 * exchange it lets through writes a session. Two token buckets: one per link, so a link
 * replayed in a loop gets a trickle (and its `maxSessions` ends it), and one for the whole
 * instance, so many links at once cannot turn it into a write pump. Pure: the caller passes the time.
 */

/** A bucket's shape: it holds at most `burst` exchanges and refills at `perMinute`. */
export interface ExchangeRule {
  burst: number;
  perMinute: number;
}

/** One link: a user opening the portal in a few tabs at once, then one every 10 s. */
export const LINK_EXCHANGES: ExchangeRule = { burst: 5, perMinute: 6 };
/** One instance, every link together: 10 a second sustained, bursts of 50. */
export const INSTANCE_EXCHANGES: ExchangeRule = { burst: 50, perMinute: 600 };
/** Links whose bucket an instance keeps: past this the least recently used goes (and would start full again). */
export const MAX_TRACKED_LINKS = 10_000;

interface Bucket {
  tokens: number;
  /** Epoch ms it was last refilled. */
  at: number;
}

export type ExchangeAdmission = { ok: true } | { ok: false; limit: 'link' | 'instance'; retryAfterSeconds: number };

function refilled(bucket: Bucket | undefined, rule: ExchangeRule, nowMs: number): Bucket {
  if (!bucket) return { tokens: rule.burst, at: nowMs };
  const elapsed = Math.max(0, nowMs - bucket.at);
  return { tokens: Math.min(rule.burst, bucket.tokens + (elapsed * rule.perMinute) / 60_000), at: Math.max(nowMs, bucket.at) };
}

/** Whole seconds until the bucket holds one exchange again (at least 1). */
function secondsUntilOne(bucket: Bucket, rule: ExchangeRule): number {
  return Math.max(1, Math.ceil(((1 - bucket.tokens) * 60_000) / rule.perMinute / 1000));
}

/** One instance's buckets: the instance's own and one per link it has seen lately. */
export class ExchangeLimiter {
  private readonly links = new Map<string, Bucket>();
  private instance: Bucket | undefined;

  constructor(
    private readonly rules: { link: ExchangeRule; instance: ExchangeRule } = { link: LINK_EXCHANGES, instance: INSTANCE_EXCHANGES },
    private readonly maxLinks = MAX_TRACKED_LINKS,
  ) {}

  /** Takes one exchange of link `linkId` at `nowMs` from both buckets, or says which is empty and for how long. */
  admit(linkId: string, nowMs: number): ExchangeAdmission {
    const link = refilled(this.links.get(linkId), this.rules.link, nowMs);
    const instance = refilled(this.instance, this.rules.instance, nowMs);
    this.instance = instance;
    // Re-inserted, so the map's first key is always the least recently seen link.
    this.links.delete(linkId);
    this.links.set(linkId, link);
    if (this.links.size > this.maxLinks) this.links.delete(this.links.keys().next().value!);
    // The link's bucket first: one link knocking in a loop spends its own, not everyone's.
    if (link.tokens < 1) return { ok: false, limit: 'link', retryAfterSeconds: secondsUntilOne(link, this.rules.link) };
    if (instance.tokens < 1) return { ok: false, limit: 'instance', retryAfterSeconds: secondsUntilOne(instance, this.rules.instance) };
    link.tokens -= 1;
    instance.tokens -= 1;
    return { ok: true };
  }
}
