import { AccountQuotas } from '../../domain/access/account';
import { admitStep, afterTake, Allowance, retryAfterSeconds } from '../../domain/intake/quota';
import { Clock, Logger } from '../../ports/clock';
import { QuotaStore } from '../../ports/accounts';

export type QuotaVerdict = { ok: true } | { ok: false; account: string; limit: number; retryAfterSeconds: number; why: 'spent' | 'too-big' };

/**
 * Ingest's side of the per-account publish quota: each instance holds a lease of each
 * account's bucket, sized by its recent demand, and spends it locally, taking the next lease
 * ahead of need, one take per account at a time (domain/intake/quota.ts). An account within its
 * quota thus never waits for the bucket after its first event, and one far past it is refused
 * without I/O while its bucket is empty. When the bucket cannot be reached the request is admitted and a warning logged:
 * the quota protects other accounts' share of Herald, and refusing every event while
 * Firestore hiccups would protect nobody.
 */
export class PublishQuotas {
  private readonly held = new Map<string, Allowance>();
  /**
   * The take in flight per account: concurrent requests share it rather than contend on the
   * bucket. Until it is sent (the end of the current turn of the event loop), what each asks
   * is added to it, so requests arriving together are covered by one take however small the
   * instance's recent demand.
   */
  private readonly taking = new Map<string, { want: number; sent: boolean; done: Promise<void> }>();
  /** Each account's quota as last read, for refusedNow. */
  private readonly limits = new Map<string, number>();

  constructor(
    private readonly store: QuotaStore,
    private readonly quotasOf: (account: string) => Promise<AccountQuotas>,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  /** Whether `count` events of each account may be accepted now; the first account over its quota refuses the request. */
  async admit(counts: ReadonlyMap<string, number>): Promise<QuotaVerdict> {
    for (const [account, n] of counts) {
      const limit = (await this.quotasOf(account)).publishPerSecond;
      if (limit === undefined) {
        this.limits.delete(account);
        continue;
      }
      this.limits.set(account, limit);
      const verdict = await this.admitOne(account, n, limit);
      if (!verdict.ok) return verdict;
    }
    return { ok: true };
  }

  /**
   * Refused before the request is even parsed: the account holds no token here and its bucket
   * is known to be empty. A flood past the quota then costs its 429 and little else.
   */
  refusedNow(account: string): Extract<QuotaVerdict, { ok: false }> | undefined {
    const held = this.held.get(account);
    const now = this.clock.now().getTime();
    if (!held || held.tokens >= 1 || held.emptyUntil === undefined || held.emptyUntil <= now || this.limits.get(account) === undefined) return undefined;
    return { ok: false, account, limit: this.limits.get(account)!, retryAfterSeconds: retryAfterSeconds(held.emptyUntil - now), why: 'spent' };
  }

  private async admitOne(account: string, n: number, limit: number): Promise<QuotaVerdict> {
    // With what is held; again after a take (which may have been a smaller one already in flight); then refused.
    for (let round = 0; ; round++) {
      const now = this.clock.now().getTime();
      const step = admitStep(this.held.get(account), n, limit, now);
      this.held.set(account, step.allowance);
      if (step.kind === 'admit') {
        if (step.prefetch > 0) void this.take(account, step.prefetch, limit, false);
        return { ok: true };
      }
      if (step.kind === 'refuse') return { ok: false, account, limit, retryAfterSeconds: retryAfterSeconds(step.retryAfterMs), why: step.why };
      if (round > 1) return { ok: false, account, limit, retryAfterSeconds: 1, why: 'spent' };
      if (!(await this.take(account, step.want, limit, true))) return { ok: true };
    }
  }

  /** One take for the account (joining the one in flight): false when the bucket could not be reached. */
  private async take(account: string, want: number, limit: number, gather: boolean): Promise<boolean> {
    let pending = this.taking.get(account);
    if (pending && !pending.sent) pending.want = Math.min(limit, pending.want + want);
    if (!pending) {
      const entry = { want, sent: false, done: Promise.resolve() };
      // A take ahead is sent at once; one that requests wait for gathers what the others ask.
      entry.done = (gather ? new Promise<void>((resolve) => setImmediate(resolve)) : Promise.resolve())
        .then(() => {
          entry.sent = true;
          return this.takeNow(account, entry.want, limit);
        })
        .finally(() => this.taking.delete(account));
      this.taking.set(account, entry);
      pending = entry;
    }
    try {
      await pending.done;
      return true;
    } catch (e) {
      this.log.warn(`the publish quota of account ${account} could not be checked; the events are accepted`, { account, error: (e as Error).message });
      return false;
    }
  }

  private async takeNow(account: string, want: number, limit: number): Promise<void> {
    const granted = await this.store.take(account, want, limit, this.clock.now().getTime());
    const now = this.clock.now().getTime();
    const current = this.held.get(account);
    this.held.set(account, afterTake(current && current.validUntil > now ? current : { tokens: 0, validUntil: now }, want, granted, limit, now));
  }
}
