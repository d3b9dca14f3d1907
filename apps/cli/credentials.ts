import { z } from 'zod';
import { ACCOUNT_ID, keyIdOf } from '../../shared/domain/access/account';
import { UsageError } from './errors';

/**
 * Which credential a command sends, and what to say when Herald refuses it.
 *
 * The rule (docs/cli.md, "Acting as an account"): a flag beats the environment; an account key
 * (`--api-key` / HERALD_API_KEY) and a token (`--admin-token` / `--ingest-token`, or their
 * HERALD_* variables) given at the same level are settled as follows:
 * - both as flags: a usage error, since either reading could be the wrong one;
 * - one as a flag, the other in the environment: the flag;
 * - both in the environment: the account key. Setting HERALD_API_KEY is a deliberate choice
 *   to act as one account, while the admin token tends to linger in a shell from `npm start`;
 *   the narrower credential at worst gets a refusal, where the operator's would quietly
 *   change the `default` account instead of the one meant.
 */

/** Herald's two APIs, each called with a credential of its own. */
export type Api = 'admin' | 'ingest';

export const API_KEY_ENV = 'HERALD_API_KEY';
export const ACCOUNT_ENV = 'HERALD_ACCOUNT';
export const TOKEN_ENV: Record<Api, string> = { admin: 'HERALD_ADMIN_TOKEN', ingest: 'HERALD_INGEST_TOKEN' };

export interface Credential {
  kind: 'token' | 'api-key';
  token: string;
  /** Where it came from, as the user would fix it: `--api-key`, `HERALD_API_KEY`, `--admin-token`… */
  source: string;
  /** A token variable that was set too but lost to HERALD_API_KEY: named in refusals, which it may explain. */
  shadowed?: string;
}

/** An environment variable's value, trimmed; unset when empty. */
export const nonEmpty = (v: string | undefined) => (v === undefined || v.trim() === '' ? undefined : v.trim());

/** The credential for `api` from the flags given (the command's own, else the root's) and the environment. */
export function pickCredential(api: Api, flags: { token?: string | undefined; apiKey?: string | undefined }, env: Record<string, string | undefined>): Credential {
  const tokenFlag = `--${api}-token`;
  if (flags.token !== undefined && flags.apiKey !== undefined) {
    throw new UsageError(`give ${tokenFlag} or --api-key, not both`, [], `${tokenFlag} acts as ${api === 'admin' ? 'the operator' : 'any producer'}, --api-key as the key's own account: pick the one you mean`);
  }
  if (flags.apiKey !== undefined) return { kind: 'api-key', token: flags.apiKey, source: '--api-key' };
  if (flags.token !== undefined) return { kind: 'token', token: flags.token, source: tokenFlag };
  const envKey = nonEmpty(env[API_KEY_ENV]);
  const envToken = nonEmpty(env[TOKEN_ENV[api]]);
  if (envKey !== undefined) return { kind: 'api-key', token: envKey, source: API_KEY_ENV, ...(envToken !== undefined ? { shadowed: TOKEN_ENV[api] } : {}) };
  if (envToken !== undefined) return { kind: 'token', token: envToken, source: TOKEN_ENV[api] };
  throw noCredential(api);
}

export function noCredential(api: Api): UsageError {
  return new UsageError(`no ${api} token or account key`, [], `pass --${api}-token or set ${TOKEN_ENV[api]} (npm start prints it), or use an account key: --api-key or ${API_KEY_ENV}`);
}

export const KEY_FORMAT_MESSAGE = 'must be an account key, hk_<16 hex digits>_<43 characters>, as herald keys create printed it';

/** A credential's own shape, checked before anything is sent. */
export function credentialSchema(kind: Credential['kind']) {
  return kind === 'api-key' ? z.string().refine((k) => keyIdOf(k) !== undefined, KEY_FORMAT_MESSAGE) : z.string().regex(/^\S+$/, 'must be one word with no spaces');
}

export const accountIdSchema = z.string().regex(ACCOUNT_ID, 'an account id is 1-63 lowercase letters, digits and hyphens, starting and ending with a letter or digit');

/** `--account` (the command's, else the root's), then HERALD_ACCOUNT; `name` is what to call it in messages. */
export function pickAccount(flag: string | undefined, env: Record<string, string | undefined>): { account: string; name: string } | undefined {
  if (flag !== undefined) return { account: flag, name: '--account' };
  const fromEnv = nonEmpty(env[ACCOUNT_ENV]);
  return fromEnv === undefined ? undefined : { account: fromEnv, name: ACCOUNT_ENV };
}

/** ` (HERALD_ADMIN_TOKEN is set too, but HERALD_API_KEY comes first: …)`, where that may be why. */
function shadowNote(c: Credential): string {
  return c.shadowed ? `; ${c.shadowed} is set too, but ${c.source} comes first: pass --${c.shadowed === TOKEN_ENV.admin ? 'admin' : 'ingest'}-token to use it` : '';
}

/** What to do about a 401 or 403, knowing which credential was sent and where it came from. */
export function refusalHint(api: Api, c: Credential, status: 401 | 403, message: string): string {
  if (c.kind === 'token') return `check ${TOKEN_ENV[api]} — npm start prints it`;
  const keyId = keyIdOf(c.token);
  if (status === 401) {
    return `the account key ${keyId ?? ''} from ${c.source} was refused: a revoked or expired key stays refused. Get a new one (herald keys create <account> --name <name>) and pass it with --api-key or ${API_KEY_ENV}${shadowNote(c)}`;
  }
  if (/\boperator\b/.test(message)) return `this needs the admin token (--admin-token or ${TOKEN_ENV.admin}); an account key cannot${shadowNote(c)}`;
  if (/\bscope\b/.test(message)) return `the key from ${c.source} lacks that scope: create one that has it (herald keys create <account> --name <name> --scopes read,write,publish)${shadowNote(c)}`;
  return `an account key acts for its own account only: drop --account (and ${ACCOUNT_ENV}) or use the ${api} token${shadowNote(c)}`;
}

/** An account that is not there, or (to a key) not its own: Herald answers both alike, 404. */
export function noAccountHint(c: Credential | undefined): string {
  if (c?.kind !== 'api-key') return 'see the accounts there are with: herald accounts list';
  return `the account key from ${c.source} reaches only its own account and gets 404 for any other, whether it exists or not: use the key's own account (drop --account and ${ACCOUNT_ENV}), or the admin token for another${shadowNote(c)}`;
}
