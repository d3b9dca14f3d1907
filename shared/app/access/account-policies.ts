import { Account, AccountQuotas, DEFAULT_ACCOUNT, FailurePolicy, failurePolicyOf } from '../../domain/access/account';
import { QuotaDefaults, quotasOf } from '../../domain/intake/quota';
import { allowedTopicsInForce } from '../../domain/access/topic-allow-list';
import { AccountStore } from '../../ports/accounts';
import { Clock, Logger } from '../../ports/clock';
import { forEachLimited } from '../support/for-each-limited';

/** Accounts (and ids found to name none) an instance remembers; past it the one read longest ago is forgotten, and read again when next named. */
const ACCOUNTS_HELD = 10_000;
/** Accounts read at once when one request names many. */
const READS_AT_ONCE = 16;
import type { AllowedTopics } from './topic-access';

/**
 * What each account's settings mean for delivery and ingest: its failure policy (docs/accounts.md),
 * its quotas and the topics its destinations may publish to. An account is read at most once
 * per `ttlMs` per instance, so a change applies within that bound (HERALD_DESTINATION_CACHE_MS,
 * 10 s by default). The policy is read only when an attempt has failed; the quotas on each
 * publish and the allowed topics on each topic destination's attempt (from the cache).
 */
export class AccountPolicies {
  private readonly known = new Map<string, { account: Account | undefined; readAt: number }>();

  constructor(
    private readonly store: Pick<AccountStore, 'get'>,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly ttlMs: number,
    private readonly defaults: QuotaDefaults = { publishPerSecond: 0, destinations: 0 },
    /** HERALD_DEFAULT_ACCOUNT_TOPICS: allowed to the `default` account besides its own list. */
    private readonly defaultAccountTopics: readonly string[] = [],
  ) {}

  /**
   * The accounts of `accounts` that do not exist (`default` always does), from the same cache as
   * the quotas: a publish that reads an account's quotas costs no second read to know it exists.
   * An account that cannot be read and was never read is taken as existing: the check keeps
   * events of made-up accounts out, it must not close ingest while Firestore hiccups.
   */
  async missing(accounts: Iterable<string>): Promise<string[]> {
    const absent: string[] = [];
    await forEachLimited([...new Set(accounts)].filter((a) => a !== DEFAULT_ACCOUNT), READS_AT_ONCE, async (account) => {
      const read = await this.read(account);
      const known = read.ok ? read.account !== undefined : this.known.get(account)?.account !== undefined || !this.known.has(account);
      if (!read.ok) this.log.warn(`account ${account} could not be read; ${known ? 'its events are taken as of an existing account' : 'it was last known not to exist'}`, { account, error: read.error });
      if (!known) absent.push(account);
    });
    return absent.sort();
  }

  async policyOf(account: string): Promise<FailurePolicy> {
    const read = await this.read(account);
    // The attempt is made: its outcome is recorded with what was last known (retry, the default, if nothing), not lost.
    if (!read.ok) this.log.warn(`the settings of account ${account} could not be read; its failure policy is taken as ${failurePolicyOf(read.last)}`, { account, error: read.error });
    return failurePolicyOf(read.ok ? read.account : read.last);
  }

  /** The quotas that apply; when the account cannot be read, the last known (none at all if never read: ingest stays open). */
  async quotasOf(account: string): Promise<AccountQuotas> {
    const read = await this.read(account);
    if (!read.ok) {
      this.log.warn(`the quotas of account ${account} could not be read; ${read.last ? 'the last known apply' : 'none apply until they can be'}`, { account, error: read.error });
      return read.last ? quotasOf(account, read.last, this.defaults) : {};
    }
    return quotasOf(account, read.account, this.defaults);
  }

  /**
   * The topics the account's destinations may publish to (the cache); when the account cannot
   * be read, the last known, and without one `unreadable`: never a guess that lets a topic through.
   */
  async allowedTopicsOf(account: string): Promise<AllowedTopics> {
    const read = await this.read(account);
    if (read.ok) return { entries: allowedTopicsInForce(account, read.account?.allowedTopics, this.defaultAccountTopics) };
    if (!read.seen) return { unreadable: read.error };
    this.log.warn(`the allowed topics of account ${account} could not be read; the last known apply`, { account, error: read.error });
    return { entries: allowedTopicsInForce(account, read.last?.allowedTopics, this.defaultAccountTopics) };
  }

  /** The same read now, past the cache (registration: a list the operator just changed applies at once); throws when it cannot be read. */
  async allowedTopicsNow(account: string): Promise<string[]> {
    const found = await this.store.get(account);
    this.known.set(account, { account: found, readAt: this.clock.now().getTime() });
    return allowedTopicsInForce(account, found?.allowedTopics, this.defaultAccountTopics);
  }

  private async read(account: string): Promise<{ ok: true; account: Account | undefined } | { ok: false; last: Account | undefined; seen: boolean; error: string }> {
    const now = this.clock.now().getTime();
    const cached = this.known.get(account);
    if (cached && now - cached.readAt < this.ttlMs) return { ok: true, account: cached.account };
    try {
      const found = await this.store.get(account);
      this.known.delete(account);
      this.known.set(account, { account: found, readAt: now });
      if (this.known.size > ACCOUNTS_HELD) this.known.delete(this.known.keys().next().value!);
      return { ok: true, account: found };
    } catch (e) {
      return { ok: false, last: cached?.account, seen: cached !== undefined, error: (e as Error).message };
    }
  }
}
