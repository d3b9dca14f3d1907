import { z } from 'zod';
import {
  Account,
  AccountQuotas,
  ACCOUNT_ID,
  accountCreateSchema,
  accountIdFromName,
  AccountKeyView,
  accountPatchSchema,
  AccountSettings,
  accountSettingsSchema,
  actorOf,
  Caller,
  DEFAULT_ACCOUNT,
  KEY_ID,
  keyCreateSchema,
  keyGrant,
  keyView,
  mintKey,
  newAccount,
  patchAccount,
  reaches,
  withSettings,
} from '../../domain/access/account';
import { issuesFromZod } from '../../domain/events/event';
import { QuotaDefaults, quotasOf } from '../../domain/intake/quota';
import { allowedTopicsInForce } from '../../domain/access/topic-allow-list';
import { AccountDataEraser, AccountStore } from '../../ports/accounts';
import { Clock, Logger } from '../../ports/clock';
import { DestinationStore } from '../../ports/destinations';
import { Outcome } from '../support/outcome';
import { KeyVerifier } from '../access/key-verifier';
import { eraseAccountData, Erased, PURGE_INLINE_MS } from '../access/account-purge';

export interface AccountsAdminDeps {
  accounts: AccountStore;
  destinations: Pick<DestinationStore, 'countAccount'>;
  keys: KeyVerifier;
  clock: Clock;
  log: Logger;
  /** The deployment's quotas for accounts without their own (shown as `quotasInForce`). */
  quotaDefaults?: QuotaDefaults;
  /** HERALD_DEFAULT_ACCOUNT_TOPICS: allowed to `default` besides its own list (shown in `allowedTopicsInForce`). */
  defaultAccountTopics?: readonly string[];
  /** Ends the account's portal links and sessions when it is deleted (app/access/portal-verifier.ts). */
  portalAccess?: { endAccount(account: string): Promise<void> };
  /** Deletes what a deleted account leaves in the other stores (app/access/account-purge.ts). */
  accountData: AccountDataEraser;
  /** How long DELETE /admin/accounts/{id} deletes the account's data before answering (default PURGE_INLINE_MS). */
  purgeInlineMs?: number;
}

/**
 * An account, with the quotas that apply to it (its own, or the deployment's defaults; absent:
 * no limit) and the topics its destinations may publish to (its own list, and for `default` the
 * deployment's too).
 */
export type AccountView = Account & { quotasInForce: AccountQuotas; allowedTopicsInForce: string[] };

function accountView(deps: Pick<AccountsAdminDeps, 'quotaDefaults' | 'defaultAccountTopics'>, account: Account): AccountView {
  return {
    ...account,
    quotasInForce: quotasOf(account.id, account, deps.quotaDefaults ?? { publishPerSecond: 0, destinations: 0 }),
    allowedTopicsInForce: allowedTopicsInForce(account.id, account.allowedTopics, deps.defaultAccountTopics ?? []),
  };
}

/** The account everything belongs to when nobody said otherwise: it always exists, stored or not. */
function defaultAccount(): Account {
  return { id: DEFAULT_ACCOUNT, name: 'Default account', settings: {}, createdAt: '1970-01-01T00:00:00.000Z', updatedAt: '1970-01-01T00:00:00.000Z' };
}

/** An account as the caller may see it: undefined (not found) for one it does not reach or that does not exist. */
export async function findAccount(deps: Pick<AccountsAdminDeps, 'accounts'>, caller: Caller, id: string): Promise<Account | undefined> {
  if (!ACCOUNT_ID.test(id) || !reaches(caller, id)) return undefined;
  return (await deps.accounts.get(id)) ?? (id === DEFAULT_ACCOUNT ? defaultAccount() : undefined);
}

export const noAccount = (id: string): Outcome<never> => ({ kind: 'not-found', body: { error: `no account ${JSON.stringify(id)}; list them with GET /admin/accounts` } });

const operatorOnly = (what: string): Outcome<never> => ({ kind: 'forbidden', body: { error: `${what} is for the operator (the admin token) only; an account key or portal session cannot` } });

/** What a customer portal session may never do, even with `write`: its platform manages keys, settings and links. */
export const notInPortal = (what: string): Outcome<never> => ({ kind: 'forbidden', body: { error: `${what} is not possible from the customer portal; ask the platform that gave you the link` } });

const invalid = (what: string, error: z.ZodError): Outcome<never> => ({ kind: 'invalid', body: { error: `invalid ${what}`, issues: issuesFromZod(error) } });

export const accountListQuerySchema = z.strictObject(
  {
    limit: z.coerce.number({ error: 'limit must be a whole number from 1 to 500' }).int('limit must be a whole number from 1 to 500').min(1, 'limit must be a whole number from 1 to 500').max(500, 'limit must be a whole number from 1 to 500').default(100),
    cursor: z.string({ error: 'cursor must be given once, as the nextCursor of the previous page' }).regex(ACCOUNT_ID, 'cursor must be the nextCursor of the previous page').optional(),
  },
  { error: 'the query takes limit and cursor only' },
);

export async function createAccount(deps: AccountsAdminDeps, caller: Caller, body: unknown): Promise<Outcome<Account>> {
  if (caller.kind !== 'operator') return operatorOnly('creating an account');
  const parsed = accountCreateSchema.safeParse(body);
  if (!parsed.success) return invalid('account', parsed.error);
  const spec = parsed.data;
  if (spec.id === DEFAULT_ACCOUNT) return { kind: 'conflict', body: { error: 'the account "default" always exists; choose another id' } };
  const now = deps.clock.now();
  // From a name: its slug, or with a random tail when that is taken or was a deleted account's.
  let refused: 'taken' | 'deleted' = 'taken';
  for (const id of spec.id !== undefined ? [spec.id] : [accountIdFromName(spec.name), accountIdFromName(`${spec.name} ${Math.random().toString(36).slice(2, 8)}`)]) {
    const account = newAccount(id, spec, now);
    const made = await deps.accounts.create(account);
    if (made === 'created') {
      deps.log.info('account created', { account: id, actor: actorOf(caller) });
      return { kind: 'created', body: account };
    }
    refused = made;
  }
  const id = JSON.stringify(spec.id ?? accountIdFromName(spec.name));
  if (spec.id !== undefined && refused === 'deleted') {
    return { kind: 'conflict', body: { error: `the account id ${id} belonged to an account that was deleted, and ids of deleted accounts are never reused; give another "id"` } };
  }
  return { kind: 'conflict', body: { error: `the account id ${id} is taken; give another "id"` } };
}

export async function listAccounts(deps: AccountsAdminDeps, caller: Caller, query: Record<string, unknown>): Promise<Outcome<{ accounts: Account[]; nextCursor?: string }>> {
  const parsed = accountListQuerySchema.safeParse(query);
  if (!parsed.success) return invalid('query', parsed.error);
  if (caller.kind !== 'operator') {
    const own = await findAccount(deps, caller, caller.account);
    return { kind: 'ok', body: { accounts: own ? [own] : [] } };
  }
  const page = await deps.accounts.list({ limit: parsed.data.limit, ...(parsed.data.cursor !== undefined ? { cursor: parsed.data.cursor } : {}) });
  // `default` sorts among the stored ids; shown in its place whether or not it was ever stored.
  const accounts = page.accounts.some((a) => a.id === DEFAULT_ACCOUNT) ? page.accounts : withDefault(page.accounts, parsed.data.cursor, page.nextCursor);
  return { kind: 'ok', body: { accounts, ...(page.nextCursor !== undefined ? { nextCursor: page.nextCursor } : {}) } };
}

/** The page with the never-stored `default` account put in its sorted place, if it falls within the page. */
function withDefault(accounts: Account[], after: string | undefined, through: string | undefined): Account[] {
  if (after !== undefined && after >= DEFAULT_ACCOUNT) return accounts;
  if (through !== undefined && through < DEFAULT_ACCOUNT) return accounts;
  return [...accounts, defaultAccount()].sort((a, b) => a.id.localeCompare(b.id));
}

export async function getAccount(deps: AccountsAdminDeps, caller: Caller, id: string): Promise<Outcome<AccountView>> {
  const account = await findAccount(deps, caller, id);
  return account ? { kind: 'ok', body: accountView(deps, account) } : noAccount(id);
}

export async function updateAccount(deps: AccountsAdminDeps, caller: Caller, id: string, body: unknown): Promise<Outcome<AccountView>> {
  if (!(await findAccount(deps, caller, id))) return noAccount(id);
  // The allowed topics above all: a key that could widen them could point its destinations at another account's topic.
  if (caller.kind !== 'operator') return operatorOnly("changing an account's name, email, quotas, portal theme or allowed topics");
  const parsed = accountPatchSchema.safeParse(body);
  if (!parsed.success) return invalid('change', parsed.error);
  const now = deps.clock.now();
  // An account deleted meanwhile stays deleted: nothing is written for it.
  const written = await deps.accounts.update(id, (current) => {
    const base = current ?? (id === DEFAULT_ACCOUNT ? defaultAccount() : undefined);
    return base && patchAccount(base, parsed.data, now);
  });
  if (!written) return noAccount(id);
  const topics = parsed.data.allowedTopics !== undefined ? { allowedTopics: written.allowedTopics ?? [] } : {};
  deps.log.info('account changed', { account: id, actor: actorOf(caller), changed: Object.keys(parsed.data), ...topics });
  return { kind: 'ok', body: accountView(deps, written) };
}

export async function deleteAccount(deps: AccountsAdminDeps, caller: Caller, id: string): Promise<Outcome<never>> {
  if (!(await findAccount(deps, caller, id))) return noAccount(id);
  if (caller.kind !== 'operator') return operatorOnly('deleting an account');
  if (id === DEFAULT_ACCOUNT) return { kind: 'conflict', body: { error: 'the account "default" cannot be deleted' } };
  const left = await deps.destinations.countAccount(id);
  if (left > 0) return { kind: 'conflict', body: { error: `account ${JSON.stringify(id)} still has ${left} destination(s): delete them first (GET /admin/accounts/${id}/destinations)` } };
  const now = deps.clock.now();
  await deps.portalAccess?.endAccount(id);
  // The account and its keys go in one commit, leaving a tombstone: the id is never given
  // again, and from here every path to the account (findAccount, a key, a portal session) finds nothing.
  const deleted = await deps.accounts.delete(id, now);
  if (!deleted) return noAccount(id);
  for (const keyId of deleted.keyIds) deps.keys.forget(keyId);
  // Then its data: as much as fits in a few seconds now, the rest by the scheduled purge (app/access/account-purge.ts).
  const erased = await eraseAccountData(deps, id, now.getTime() + (deps.purgeInlineMs ?? PURGE_INLINE_MS)).catch((e: unknown): Erased | Error => e as Error);
  const purge = erased instanceof Error ? { data: 'left to the scheduled purge', error: erased.message } : { data: erased.clean ? 'deleted' : 'partly deleted; the scheduled purge goes on', erased: erased.deleted };
  deps.log.info('account deleted', { account: id, actor: actorOf(caller), keys: deleted.keyIds.length, ...purge });
  return { kind: 'done' };
}

export async function getSettings(deps: AccountsAdminDeps, caller: Caller, id: string): Promise<Outcome<AccountSettings>> {
  const account = await findAccount(deps, caller, id);
  return account ? { kind: 'ok', body: account.settings } : noAccount(id);
}

/** Seed 003: POST sets the settings (what it leaves out returns to its default), PATCH changes what it names. */
export async function setSettings(deps: AccountsAdminDeps, caller: Caller, id: string, body: unknown, mode: 'replace' | 'merge'): Promise<Outcome<AccountSettings>> {
  if (!(await findAccount(deps, caller, id))) return noAccount(id);
  if (caller.kind === 'portal') return notInPortal("changing the account's settings");
  const parsed = accountSettingsSchema.safeParse(body);
  if (!parsed.success) return invalid('settings', parsed.error);
  const now = deps.clock.now();
  const written = await deps.accounts.update(id, (current) => {
    const base = current ?? (id === DEFAULT_ACCOUNT ? defaultAccount() : undefined);
    return base && withSettings(base, parsed.data as AccountSettings, mode, now);
  });
  if (!written) return noAccount(id);
  deps.log.info('account settings changed', { account: id, actor: actorOf(caller), settings: written.settings });
  return { kind: 'ok', body: written.settings };
}

export async function createKey(deps: AccountsAdminDeps, caller: Caller, account: string, body: unknown): Promise<Outcome<AccountKeyView & { key: string }>> {
  if (!(await findAccount(deps, caller, account))) return noAccount(account);
  if (caller.kind === 'portal') return notInPortal('creating a key');
  const now = deps.clock.now();
  const parsed = keyCreateSchema(now).safeParse(body);
  if (!parsed.success) return invalid('key', parsed.error);
  const verdict = keyGrant(caller, parsed.data);
  if (!verdict.ok) return { kind: 'forbidden', body: { error: verdict.error, issues: verdict.issues } };
  const { key, record } = mintKey(account, { name: parsed.data.name, ...verdict.grant }, actorOf(caller), now);
  await deps.accounts.putKey(record);
  deps.log.info('account key created', { account, keyId: record.id, scopes: record.scopes, actor: actorOf(caller) });
  return { kind: 'created', body: { ...keyView(record), key } };
}

export async function listKeys(deps: AccountsAdminDeps, caller: Caller, account: string): Promise<Outcome<{ keys: AccountKeyView[] }>> {
  if (!(await findAccount(deps, caller, account))) return noAccount(account);
  if (caller.kind === 'portal') return notInPortal("listing the account's keys");
  return { kind: 'ok', body: { keys: (await deps.accounts.listKeys(account)).map(keyView) } };
}

export async function revokeKey(deps: AccountsAdminDeps, caller: Caller, account: string, keyId: string): Promise<Outcome<never>> {
  if (!(await findAccount(deps, caller, account))) return noAccount(account);
  if (caller.kind === 'portal') return notInPortal('revoking a key');
  const missing: Outcome<never> = { kind: 'not-found', body: { error: `no key ${JSON.stringify(keyId)} in account ${JSON.stringify(account)}; list them with GET /admin/accounts/${account}/keys` } };
  if (!KEY_ID.test(keyId)) return missing;
  const now = deps.clock.now().toISOString();
  let found = false;
  await deps.accounts.updateKey(keyId, (k) => {
    found = k?.account === account;
    return found && k!.revokedAt === undefined ? { ...k!, revokedAt: now } : undefined;
  });
  if (!found) return missing;
  deps.keys.forget(keyId);
  deps.log.info('account key revoked', { account, keyId, actor: actorOf(caller) });
  return { kind: 'done' };
}
