import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { ACCOUNT_ID, DEFAULT_ACCOUNT } from '../ids';
import type { HeraldEvent } from '../events/event';
import { PortalTheme, portalThemeSchema, PortalThemePatch, patchTheme } from './portal';
import { allowedTopicsSchema } from './topic-allow-list';

/**
 * Accounts: the platform's customers, each with its own destinations, keys and settings
 * (docs/accounts.md). Pure: ids, schemas, key material and the rules of who may do what.
 */

export { ACCOUNT_ID, DEFAULT_ACCOUNT };

/** The CloudEvents extension attribute naming an event's account (`ce-heraldaccount` in the Pub/Sub binding). */
export const ACCOUNT_EXTENSION = 'heraldaccount';

/** The account an event belongs to: its `heraldaccount`, or `default` without one. */
export function eventAccount(attributes: Readonly<Record<string, string | undefined>>): string {
  return attributes[ACCOUNT_EXTENSION] ?? DEFAULT_ACCOUNT;
}

/**
 * The event with its account named (a copy; events are frozen). The `default` account is
 * left unnamed, as events from before accounts are, so their keys and records do not change.
 */
export function withAccount(event: HeraldEvent, account: string): HeraldEvent {
  if (eventAccount(event.attributes) === account || (account === DEFAULT_ACCOUNT && event.attributes[ACCOUNT_EXTENSION] === undefined)) return event;
  return Object.freeze({ attributes: Object.freeze({ ...event.attributes, [ACCOUNT_EXTENSION]: account }), data: event.data });
}

/** Seed 003's one setting, by its seed name. */
export const FAILURE_POLICY_SETTING = 'notification.webhook.failure.policy';
export const FAILURE_POLICIES = ['retry', 'queue'] as const;
export type FailurePolicy = (typeof FAILURE_POLICIES)[number];

export interface AccountSettings {
  /** Absent: never set, which means `retry` (docs/accounts.md). */
  [FAILURE_POLICY_SETTING]?: FailurePolicy;
}

/** Limits the operator sets on an account; one left out takes the deployment's default (domain/intake/quota.ts). */
export interface AccountQuotas {
  /** Events accepted per second at ingest, across every instance. */
  publishPerSecond?: number;
  /** Destinations the account may have. */
  destinations?: number;
}

export interface Account {
  id: string;
  name: string;
  technicalEmail?: string;
  settings: AccountSettings;
  quotas?: AccountQuotas;
  /** How the customer portal looks for the account (docs/console.md); absent: Herald's own look. */
  portal?: PortalTheme;
  /**
   * The Pub/Sub topics its destinations may publish to (domain/access/topic-allow-list.ts): topics and
   * `…*` prefixes, set by the operator alone. Absent: none, so no topic destination.
   */
  allowedTopics?: string[];
  createdAt: string;
  updatedAt: string;
}

/** What a destination without a `failureMode` of its own does on a failure: its account's policy, `retry` when never set. */
export function failurePolicyOf(account: Pick<Account, 'settings'> | undefined): FailurePolicy {
  return account?.settings[FAILURE_POLICY_SETTING] ?? 'retry';
}

const accountIdSchema = z.string().regex(ACCOUNT_ID, 'an account id is 1-63 lowercase letters, digits and hyphens, starting and ending with a letter or digit');
const nameSchema = z.string({ error: 'name must be a string' }).trim().min(1, 'name must not be empty').max(200, 'name must be at most 200 characters');
const emailSchema = z.email({ error: 'technicalEmail must be an email address' });

export const accountCreateSchema = z.strictObject(
  { id: accountIdSchema.optional(), name: nameSchema, technicalEmail: emailSchema.optional() },
  { error: 'the account must be a JSON object {"id"?, "name", "technicalEmail"?}' },
);
export type AccountCreate = z.infer<typeof accountCreateSchema>;

const quotaSchema = (name: string, max: number) =>
  z
    .number({ error: `quotas.${name} must be a number, or null for the deployment's default` })
    .int(`quotas.${name} must be a whole number`)
    .min(1, `quotas.${name} must be at least 1`)
    .max(max, `quotas.${name} must be at most ${max}`)
    .nullable()
    .optional();

export const accountQuotasSchema = z.strictObject(
  { publishPerSecond: quotaSchema('publishPerSecond', 1_000_000), destinations: quotaSchema('destinations', 1_000_000) },
  { error: 'quotas must be a JSON object {"publishPerSecond"?, "destinations"?} (null: the default)' },
);

export const accountPatchSchema = z
  .strictObject(
    {
      name: nameSchema.optional(),
      technicalEmail: emailSchema.nullable().optional(),
      quotas: accountQuotasSchema.optional(),
      portal: portalThemeSchema.nullable().optional(),
      /** Replaces the whole list; null or [] removes it (no topic destinations). */
      allowedTopics: allowedTopicsSchema.nullable().optional(),
    },
    { error: 'the change must be a JSON object {"name"?, "technicalEmail"?, "quotas"?, "portal"?, "allowedTopics"?}' },
  )
  .refine((p) => p.name !== undefined || p.technicalEmail !== undefined || p.quotas !== undefined || p.portal !== undefined || p.allowedTopics !== undefined, {
    message: 'give name, technicalEmail (null removes the email), quotas, portal (null removes the theme) or allowedTopics (null removes them)',
    path: ['name'],
  });
export type AccountPatch = z.infer<typeof accountPatchSchema>;

export const accountSettingsSchema = z.strictObject(
  { [FAILURE_POLICY_SETTING]: z.enum(FAILURE_POLICIES, { error: `${FAILURE_POLICY_SETTING} must be "retry" or "queue"` }).optional() },
  { error: `the settings must be a JSON object {"${FAILURE_POLICY_SETTING}": "retry" | "queue"}` },
);

/** A new account: the id given, or one made from the name (`Acme Corp` → `acme-corp`) with a random tail if that is taken. */
export function newAccount(id: string, spec: AccountCreate, now: Date): Account {
  const at = now.toISOString();
  return { id, name: spec.name, ...(spec.technicalEmail !== undefined ? { technicalEmail: spec.technicalEmail } : {}), settings: {}, createdAt: at, updatedAt: at };
}

/** An id derived from a name: lowercase, hyphens for runs of anything else, at most 50 characters. */
export function accountIdFromName(name: string, random: () => string = () => randomBytes(3).toString('hex')): string {
  const slug = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 50)
    .replace(/-+$/, '');
  return slug && ACCOUNT_ID.test(slug) && slug !== DEFAULT_ACCOUNT ? slug : `account-${random()}`;
}

export function patchAccount(account: Account, patch: AccountPatch, now: Date): Account {
  const next: Account = { ...account, updatedAt: now.toISOString() };
  if (patch.name !== undefined) next.name = patch.name;
  if (patch.technicalEmail === null) delete next.technicalEmail;
  else if (patch.technicalEmail !== undefined) next.technicalEmail = patch.technicalEmail;
  if (patch.quotas !== undefined) {
    const quotas: AccountQuotas = { ...account.quotas };
    for (const key of ['publishPerSecond', 'destinations'] as const) {
      const value = patch.quotas[key];
      if (value === null) delete quotas[key];
      else if (value !== undefined) quotas[key] = value;
    }
    if (Object.keys(quotas).length > 0) next.quotas = quotas;
    else delete next.quotas;
  }
  if (patch.portal !== undefined) {
    const theme = patchTheme(account.portal, patch.portal as PortalThemePatch | null);
    if (theme) next.portal = theme;
    else delete next.portal;
  }
  if (patch.allowedTopics !== undefined) {
    if (patch.allowedTopics === null || patch.allowedTopics.length === 0) delete next.allowedTopics;
    else next.allowedTopics = patch.allowedTopics;
  }
  return next;
}

/** POST replaces the settings (what it leaves out returns to its default), PATCH changes only what it names. */
export function withSettings(account: Account, settings: AccountSettings, mode: 'replace' | 'merge', now: Date): Account {
  return { ...account, settings: mode === 'replace' ? { ...settings } : { ...account.settings, ...settings }, updatedAt: now.toISOString() };
}

/**
 * What is kept of a deleted account: that its id was used, so the id is never given again
 * (a new account under it would inherit whatever of the old one a cache, a link or a record
 * still names), and whether everything stored under it has been deleted yet.
 */
export interface AccountTombstone {
  id: string;
  deletedAt: string;
  /** `pending` until a pass through every store, late enough (purgeSettled), has found nothing of the account. */
  purge: 'pending' | 'done';
  purgedAt?: string;
}

/**
 * How long after an account's deletion its data may still arrive: counters an instance had
 * not flushed yet, a sample written behind an ingest, an attempt under way when its
 * destination was deleted (its directory entry lives on for HERALD_DESTINATION_CACHE_MS).
 * A purge that finds nothing left is final only after this.
 */
export const PURGE_SETTLE_MS = 5 * 60_000;

/** Whether a purge that finds nothing of the account left may mark it done. */
export function purgeSettled(tombstone: Pick<AccountTombstone, 'deletedAt'>, now: Date, settleMs = PURGE_SETTLE_MS): boolean {
  return Date.parse(tombstone.deletedAt) + settleMs <= now.getTime();
}

// ---------------------------------------------------------------- keys

export const KEY_SCOPES = ['read', 'write', 'publish'] as const;
export type KeyScope = (typeof KEY_SCOPES)[number];

/** A key as stored: never the key itself, only its SHA-256. */
export interface AccountKey {
  id: string;
  account: string;
  name: string;
  scopes: KeyScope[];
  /** Hex SHA-256 of the whole key string. */
  hash: string;
  createdAt: string;
  expiresAt?: string;
  revokedAt?: string;
  /** Who made it: `admin`, or the id of the key that did. */
  createdBy: string;
}

/** What the API shows of a key: everything but its hash. */
export type AccountKeyView = Omit<AccountKey, 'hash'>;

export const keyCreateSchema = (now: Date) =>
  z.strictObject(
    {
      name: nameSchema,
      scopes: z
        .array(z.enum(KEY_SCOPES, { error: 'a scope is "read", "write" or "publish"' }), { error: 'scopes must be an array' })
        .min(1, 'give at least one scope, or leave scopes out for every scope you may grant')
        .optional(),
      expiresAt: z.iso
        .datetime({ offset: true, error: 'expiresAt must be an ISO 8601 date-time, e.g. 2027-01-01T00:00:00Z' })
        .refine((at) => Date.parse(at) > now.getTime(), 'expiresAt must be in the future')
        .optional(),
    },
    { error: 'the key must be a JSON object {"name", "scopes"?, "expiresAt"?}' },
  );
export type KeyCreate = z.infer<ReturnType<typeof keyCreateSchema>>;

/** What a new key is given: its scopes and expiry, as the rules below decided them. */
export interface KeyGrant {
  scopes: KeyScope[];
  expiresAt?: string;
}

export type KeyGrantVerdict = { ok: true; grant: KeyGrant } | { ok: false; error: string; issues: { path: string; message: string }[] };

/**
 * What `creator` may put in a new key. The operator grants anything (all three scopes when
 * none are named). A key grants only what it holds: a scope it lacks is refused, and naming
 * none grants its own scopes, never more; nor may it mint a key that outlives it: naming no
 * expiry gives the new key the creator's, and a later one is refused. Otherwise a key could
 * widen itself (a `write` key minting a `publish` one) or escape its own expiry.
 */
export function keyGrant(creator: Caller, spec: KeyCreate): KeyGrantVerdict {
  const order = (scopes: readonly KeyScope[]) => [...new Set(scopes)].sort((a, b) => KEY_SCOPES.indexOf(a) - KEY_SCOPES.indexOf(b));
  const expiry = (at: string | undefined) => (at === undefined ? {} : { expiresAt: new Date(at).toISOString() });
  if (creator.kind === 'operator') return { ok: true, grant: { scopes: order(spec.scopes ?? KEY_SCOPES), ...expiry(spec.expiresAt) } };
  if (creator.kind === 'portal') return { ok: false, error: 'a portal session cannot create keys', issues: [{ path: 'scopes', message: 'a portal session grants no keys' }] };
  const held = order(creator.scopes);
  const missing = order((spec.scopes ?? held).filter((s) => !held.includes(s)));
  if (missing.length > 0) {
    const names = missing.map((s) => JSON.stringify(s)).join(', ');
    return {
      ok: false,
      error: `this key cannot grant ${names}: a key may grant only the scopes it holds (${held.join(', ')}); leave scopes out to grant those, or create the key with the admin token or a key that holds ${names}`,
      issues: [{ path: 'scopes', message: `${names} ${missing.length > 1 ? 'are not scopes' : 'is not a scope'} of the key making it (it holds ${held.join(', ')})` }],
    };
  }
  const limit = creator.expiresAt;
  if (limit !== undefined && spec.expiresAt !== undefined && Date.parse(spec.expiresAt) > Date.parse(limit)) {
    return {
      ok: false,
      error: `this key expires at ${limit}: a key cannot make a key that outlives it; give an expiresAt at or before ${limit}, leave it out to take that one, or create the key with the admin token`,
      issues: [{ path: 'expiresAt', message: `must be at or before ${limit}, when the key making it expires` }],
    };
  }
  return { ok: true, grant: { scopes: order(spec.scopes ?? held), ...expiry(spec.expiresAt ?? limit) } };
}

/** `hk_<16 hex: the key's id>_<43 base64url: 32 random bytes>`: the id finds the record, the rest is the secret. */
const KEY_FORMAT = /^hk_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/;

/** A key's id, as KEY_FORMAT holds it: anything else names no key (and is never looked up). */
export const KEY_ID = /^[0-9a-f]{16}$/;

export function keyHash(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** A new key and its record: the key is returned this once and never stored. */
export function mintKey(account: string, spec: KeyCreate, createdBy: string, now: Date, random: (bytes: number) => Buffer = randomBytes): { key: string; record: AccountKey } {
  const id = random(8).toString('hex');
  const key = `hk_${id}_${random(32).toString('base64url')}`;
  const record: AccountKey = {
    id,
    account,
    name: spec.name,
    scopes: [...new Set(spec.scopes ?? KEY_SCOPES)].sort((a, b) => KEY_SCOPES.indexOf(a) - KEY_SCOPES.indexOf(b)),
    hash: keyHash(key),
    createdAt: now.toISOString(),
    ...(spec.expiresAt !== undefined ? { expiresAt: new Date(spec.expiresAt).toISOString() } : {}),
    createdBy,
  };
  return { key, record };
}

/** The key id a presented token names, if it has a key's shape at all. */
export function keyIdOf(token: string): string | undefined {
  return KEY_FORMAT.exec(token)?.[1];
}

export type KeyVerdict = { ok: true; key: AccountKey } | { ok: false; reason: 'unknown' | 'revoked' | 'expired' };

/** Whether `token` is the key `record` holds, and still valid at `now` (the hashes compared in constant time). */
export function verifyKey(token: string, record: AccountKey | undefined, now: Date): KeyVerdict {
  const presented = Buffer.from(keyHash(token), 'hex');
  // Compared even without a record, so an unknown id takes as long as a wrong secret.
  const expected = Buffer.from(record?.hash ?? '0'.repeat(64), 'hex');
  const same = presented.length === expected.length && timingSafeEqual(presented, expected);
  if (!record || !same) return { ok: false, reason: 'unknown' };
  if (record.revokedAt !== undefined) return { ok: false, reason: 'revoked' };
  if (record.expiresAt !== undefined && record.expiresAt <= now.toISOString()) return { ok: false, reason: 'expired' };
  return { ok: true, key: record };
}

export function keyView(record: AccountKey): AccountKeyView {
  const { hash: _hash, ...view } = record;
  return view;
}

// ---------------------------------------------------------------- callers

/**
 * Who is calling: the operator (the admin token), one account's key, or a customer portal
 * session (shared/domain/access/portal.ts) acting for its account, restricted to `destinations` when given.
 */
export type Caller =
  | { kind: 'operator' }
  | { kind: 'key'; account: string; keyId: string; scopes: readonly KeyScope[]; expiresAt?: string }
  | { kind: 'portal'; account: string; sessionId: string; scopes: readonly KeyScope[]; destinations?: readonly string[] };

export const OPERATOR: Caller = { kind: 'operator' };

/** The scope an admin request needs: reading, or changing anything. */
export function scopeFor(method: string): KeyScope {
  return method === 'GET' || method === 'HEAD' ? 'read' : 'write';
}

/** Who a change is recorded as (audit log): `admin`, `key:<id>`, or `portal:<link id>`. */
export function actorOf(caller: Caller): string {
  return caller.kind === 'operator' ? 'admin' : caller.kind === 'key' ? `key:${caller.keyId}` : `portal:${caller.sessionId}`;
}

/** Whether a portal session may see this destination (its own id): every one of its account's, unless narrowed. */
export function seesDestination(caller: Caller, id: string): boolean {
  return caller.kind !== 'portal' || caller.destinations === undefined || caller.destinations.includes(id);
}

/**
 * Whether `caller` may touch `account` at all. A key asking for another account's anything
 * is told it does not exist (404, never 403): it learns nothing, not even that the account is there.
 */
export function reaches(caller: Caller, account: string): boolean {
  return caller.kind === 'operator' || caller.account === account;
}

export function hasScope(caller: Caller, scope: KeyScope): boolean {
  return caller.kind === 'operator' || caller.scopes.includes(scope);
}
