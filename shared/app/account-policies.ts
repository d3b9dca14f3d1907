import { FailurePolicy, failurePolicyOf } from '../domain/account';
import { AccountStore, Clock, Logger } from '../ports';

/**
 * Each account's failure policy (seed 003) as deliver needs it: read at most once per `ttlMs`
 * per account and instance, so a change applies to new failures within that bound
 * (HERALD_DESTINATION_CACHE_MS, 10 s by default). Read only when an attempt has failed.
 */
export class AccountPolicies {
  private readonly known = new Map<string, { policy: FailurePolicy; readAt: number }>();

  constructor(
    private readonly store: Pick<AccountStore, 'get'>,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly ttlMs: number,
  ) {}

  async policyOf(account: string): Promise<FailurePolicy> {
    const now = this.clock.now().getTime();
    const cached = this.known.get(account);
    if (cached && now - cached.readAt < this.ttlMs) return cached.policy;
    try {
      const policy = failurePolicyOf(await this.store.get(account));
      this.known.set(account, { policy, readAt: now });
      return policy;
    } catch (e) {
      // The attempt is made: its outcome is recorded with what was last known (retry, the default, if nothing), not lost.
      const policy = cached?.policy ?? 'retry';
      this.log.warn(`the settings of account ${account} could not be read; its failure policy is taken as ${policy}`, { account, error: (e as Error).message });
      return policy;
    }
  }
}
