import { Command } from 'commander';
import { z } from 'zod';
import { AccountKeyView, KeyCreate, keyCreateSchema, keyIdOf, KEY_SCOPES, KeyScope } from '../../../shared/domain/access/account';
import { AccountsApi, CreatedKey } from '../accounts-client';
import { naming } from '../answers';
import { CommandContext, connectionOptions, issuesOf, usageError, validate } from '../context';
import { accountIdSchema, API_KEY_ENV } from '../credentials';
import { table } from './destination-args';

/**
 * `herald keys list|create|revoke`: an account's keys (POST/GET/DELETE
 * /admin/accounts/{id}/keys). The operator manages every account's; a key with `write`, its
 * own account's. A key is shown once, when it is created: Herald keeps only its hash.
 */

const ACCOUNT_ARG = { account: '<account>' };
const SCOPES_TEXT = KEY_SCOPES.join(', ');

const isScope = (s: string): s is KeyScope => (KEY_SCOPES as readonly string[]).includes(s);

/** `read,write` → ['read', 'write'], each checked, so a typo is named before anything is sent. */
const scopesSchema = z.string().transform((text, ctx): KeyScope[] => {
  const scopes = text.split(',').map((s) => s.trim()).filter((s) => s !== '');
  if (scopes.length === 0) ctx.addIssue({ code: 'custom', message: `give at least one scope (${SCOPES_TEXT}), or leave --scopes out for every scope you may grant` });
  for (const s of scopes) if (!isScope(s)) ctx.addIssue({ code: 'custom', message: `${JSON.stringify(s)} is not a scope: they are ${SCOPES_TEXT}, comma-separated` });
  return scopes.filter(isScope);
});

/**
 * The options as typed, into the API's key request: each field checked by the domain's own
 * schema (at `now`: expiresAt must be ahead), side by side, so every problem shows at once.
 */
function specFromOptions(now: Date) {
  const domain = keyCreateSchema(now).shape;
  return z
    .object({
      name: z.string({ error: 'is required: what the key is for, e.g. --name ci' }).pipe(domain.name),
      scopes: scopesSchema.optional(),
      // The format first, alone: "in the future" means nothing for a time that does not parse.
      expiresAt: z.iso.datetime({ offset: true, error: 'must be an ISO 8601 time with a zone, e.g. 2027-01-01T00:00:00Z' }).pipe(domain.expiresAt.unwrap()).optional(),
    })
    .transform(({ name, scopes, expiresAt }): KeyCreate => ({ name, ...(scopes !== undefined ? { scopes } : {}), ...(expiresAt !== undefined ? { expiresAt } : {}) }));
}

const SPEC_FLAGS = { name: '--name', scopes: '--scopes', expiresAt: '--expires-at' };

/** A key id is 16 hex digits; the whole `hk_…` key names one too, so either is taken. */
const keyIdSchema = z
  .string()
  .transform((k) => keyIdOf(k) ?? k)
  .pipe(z.string().regex(/^[0-9a-f]{16}$/, 'a key id is 16 hex digits, as herald keys list shows it (or give the whole hk_… key)'));

/** active, revoked or expired, at `now`. */
function keyState(k: AccountKeyView, now: Date): string {
  if (k.revokedAt !== undefined) return `revoked ${k.revokedAt}`;
  if (k.expiresAt !== undefined && Date.parse(k.expiresAt) <= now.getTime()) return 'expired';
  return 'active';
}

export function keysTable(keys: readonly AccountKeyView[], now: Date): string {
  return table([
    ['ID', 'NAME', 'SCOPES', 'STATE', 'CREATED AT', 'EXPIRES AT', 'CREATED BY'],
    ...keys.map((k) => [k.id, k.name, k.scopes.join(','), keyState(k, now), k.createdAt, k.expiresAt ?? 'never', k.createdBy]),
  ]);
}

/** What people read beside a new key (stderr): what it is, and that this is the only time it is shown. */
export function createdKeyNotes(k: CreatedKey): string[] {
  return [
    `created key ${k.id} (${JSON.stringify(k.name)}) for account ${k.account}: scopes ${k.scopes.join(', ')}; expires ${k.expiresAt ?? 'never'}`,
    'this key is shown only this once: store it now, Herald keeps only its hash and cannot show it again',
    `use it with ${API_KEY_ENV}=<key> or --api-key <key>; revoke it with: herald keys revoke ${k.account} ${k.id}`,
  ];
}

export function registerKeys(program: Command, ctx: CommandContext): void {
  const group = program.command('keys').description("list, create and revoke an account's API keys (hk_…), each scoped to read, write and/or publish");
  const api = (command: Command) => new AccountsApi(ctx.client(command, 'admin'));

  const list = group
    .command('list')
    .argument('<account>', 'account id')
    .description("list an account's keys (never the keys themselves)")
    .option('--json', 'print a JSON array instead of a table');
  connectionOptions(list, 'admin', { account: 'ignore' });
  list.action(async (account: string) => {
    const input = validate(z.object({ account: accountIdSchema }), { account }, ACCOUNT_ARG, list);
    const keys = await api(list).keys(input.account);
    if (list.opts<{ json?: boolean }>().json) ctx.json(keys);
    else if (keys.length === 0) ctx.note(`account ${input.account} has no keys yet; create one with: herald keys create ${input.account} --name <name>`);
    else ctx.out(keysTable(keys, new Date()));
  });

  const create = group
    .command('create')
    .argument('<account>', 'account id')
    .description('create a key for an account; prints it once (stdout), with notes on stderr')
    .option('--name <name>', 'what the key is for (required), e.g. ci or billing-service')
    .option('--scopes <scopes>', `comma-separated, from ${SCOPES_TEXT} (default: all three with the admin token; with a key, the key's own)`)
    .option('--expires-at <time>', 'when it stops working, ISO 8601 with a zone, e.g. 2027-01-01T00:00:00Z (default: never)')
    .option('--json', 'print the whole answer (the key record and the key) as JSON');
  connectionOptions(create, 'admin', { account: 'ignore' });
  create.addHelpText(
    'after',
    `
read lets the key GET anything of its account; write change it (destinations, settings, its
keys); publish send events to /ingest for it. stdout is the key alone, so a script can keep
it: KEY=$(herald keys create acme --name ci --scopes read,write).

Examples:
  herald keys create acme --name ci --scopes read,write
  herald keys create acme --name billing-publisher --scopes publish --expires-at 2027-06-01T00:00:00Z`,
  );
  create.action(async (account: string) => {
    const opts = create.opts<{ name?: string; scopes?: string; expiresAt?: string; json?: boolean }>();
    // Every problem at once: the account and the key's spec.
    const accountResult = issuesOf(z.object({ account: accountIdSchema }), { account }, ACCOUNT_ARG);
    const specResult = issuesOf(specFromOptions(new Date()), { name: opts.name, scopes: opts.scopes, expiresAt: opts.expiresAt }, SPEC_FLAGS);
    if (!accountResult.ok || !specResult.ok) throw usageError(create, [...(accountResult.ok ? [] : accountResult.issues), ...(specResult.ok ? [] : specResult.issues)]);
    const input = { account: accountResult.data.account, spec: specResult.data };
    const created = await api(create).createKey(input.account, input.spec);
    if (opts.json) ctx.json(created);
    else ctx.out(created.key);
    for (const line of createdKeyNotes(created)) ctx.note(line);
  });

  const revoke = group
    .command('revoke')
    .argument('<account>', 'account id')
    .argument('<key-id>', 'key id, as herald keys list shows it (or the whole hk_… key)')
    .description('revoke a key: Herald refuses it everywhere within 5 s');
  connectionOptions(revoke, 'admin', { account: 'ignore' });
  revoke.action(async (account: string, keyId: string) => {
    const input = validate(z.object({ account: accountIdSchema, keyId: keyIdSchema }), { account, keyId }, { ...ACCOUNT_ARG, keyId: '<key-id>' }, revoke);
    const missing = { what: `no key ${JSON.stringify(input.keyId)} in account ${JSON.stringify(input.account)}`, hint: `see the keys there are with: herald keys list ${input.account}` };
    await naming(() => api(revoke).revokeKey(input.account, input.keyId), missing);
    ctx.note(`revoked key ${input.keyId} of account ${input.account}: Herald refuses it everywhere within 5 s`);
  });
}
