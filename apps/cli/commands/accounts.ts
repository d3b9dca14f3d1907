import { Command } from 'commander';
import { z } from 'zod';
import { Account, accountCreateSchema, accountPatchSchema, AccountSettings, DEFAULT_ACCOUNT, FAILURE_POLICIES, FAILURE_POLICY_SETTING } from '../../../shared/domain/access/account';
import { AccountsApi } from '../accounts-client';
import { naming } from '../answers';
import { CommandContext, connectionOptions, issuesOf, usageError, validate } from '../context';
import { accountIdSchema } from '../credentials';
import { table } from './destination-args';

/**
 * `herald accounts list|show|create|update|delete|settings` over /admin/accounts
 * (docs/accounts.md). Creating, changing and deleting accounts is the operator's; a key
 * sees (and sets the settings of) its own account alone.
 */

const ID_ARG = { id: '<id>' };
const JSON_HELP = 'print the JSON Herald answered instead of lines for people';

/** What `list` shows of a policy: the setting, or `retry` marked as the default it falls back to. */
const policyText = (settings: AccountSettings) => settings[FAILURE_POLICY_SETTING] ?? 'retry (default)';

/** The topics its destinations may publish to: those in force (GET shows them), else its own list. */
function topicsText(a: Account & { allowedTopicsInForce?: string[] }): string {
  const topics = a.allowedTopicsInForce ?? a.allowedTopics ?? [];
  return topics.length > 0 ? topics.join(', ') : 'none (no topic destinations)';
}

/** One account for people: a label per line. */
export function accountText(a: Account): string {
  return table([
    ['id', a.id],
    ['name', a.name],
    ['technical email', a.technicalEmail ?? '-'],
    ['failure policy', policyText(a.settings)],
    ['allowed topics', topicsText(a)],
    ['created at', a.createdAt],
    ['updated at', a.updatedAt],
  ]);
}

export function accountsTable(accounts: readonly Account[]): string {
  return table([['ID', 'NAME', 'TECHNICAL EMAIL', 'FAILURE POLICY', 'CREATED AT'], ...accounts.map((a) => [a.id, a.name, a.technicalEmail ?? '-', policyText(a.settings), a.createdAt])]);
}

export function settingsText(settings: AccountSettings): string {
  return table([[FAILURE_POLICY_SETTING, settings[FAILURE_POLICY_SETTING] ?? 'retry (the default: never set)']]);
}

/**
 * `--email x` sets it, `--no-email` (false) removes it: the API's null. `--allowed-topic`
 * (repeatable) replaces the allowed topics, `--no-allowed-topics` removes them.
 */
const updateOptionsSchema = z
  .object({ id: accountIdSchema, name: z.string().optional(), email: z.union([z.string(), z.literal(false)]).optional(), topics: z.union([z.array(z.string()), z.literal(false)]).optional() })
  .refine((o) => o.name !== undefined || o.email !== undefined || o.topics !== undefined, { message: 'nothing to change: give --name, --email <email>, --no-email, --allowed-topic <topic> or --no-allowed-topics', path: [] });

const collect = (value: string, previous: string[] | undefined) => [...(previous ?? []), value];

const failurePolicySchema = z
  .string()
  .transform((s) => s.trim().toLowerCase())
  .pipe(z.enum(FAILURE_POLICIES, { error: `must be ${FAILURE_POLICIES.map((p) => `"${p}"`).join(' or ')}` }));

export function registerAccounts(program: Command, ctx: CommandContext): void {
  const group = program
    .command('accounts')
    .description("list, show, create, update and delete accounts (each customer's destinations, keys and settings), and set their settings");
  const api = (command: Command) => new AccountsApi(ctx.client(command, 'admin'));
  const withJson = (command: Command) => command.option('--json', JSON_HELP);
  const print = (json: boolean | undefined, value: unknown, text: string) => (json ? ctx.json(value) : ctx.out(text));

  const list = withJson(group.command('list').description('list the accounts (a table; a key sees its own account alone)'));
  connectionOptions(list, 'admin', { account: 'ignore' });
  list.action(async () => {
    const accounts = await api(list).list();
    if (list.opts<{ json?: boolean }>().json) ctx.json(accounts);
    else ctx.out(accountsTable(accounts));
  });

  const show = withJson(group.command('show').argument('<id>', 'account id').description('show one account: name, technical email, failure policy, allowed topics'));
  connectionOptions(show, 'admin', { account: 'ignore' });
  show.action(async (id: string) => {
    const input = validate(z.object({ id: accountIdSchema }), { id }, ID_ARG, show);
    const account = await api(show).get(input.id);
    print(show.opts<{ json?: boolean }>().json, account, accountText(account));
  });

  const create = withJson(
    group
      .command('create')
      .argument('<name>', "the account's name, e.g. 'Acme Corp'")
      .description('create an account (operator only)')
      .option('--id <id>', 'its id: lowercase letters, digits and hyphens (default: made from the name, Acme Corp → acme-corp)')
      .option('--email <email>', 'technical email: who to tell about its destinations'),
  );
  connectionOptions(create, 'admin', { account: 'ignore' });
  create.addHelpText('after', `\nExample:\n  herald accounts create 'Acme Corp' --id acme --email ops@acme.example`);
  create.action(async (name: string) => {
    const opts = create.opts<{ id?: string; email?: string; json?: boolean }>();
    const raw = { name, ...(opts.id !== undefined ? { id: opts.id } : {}), ...(opts.email !== undefined ? { technicalEmail: opts.email } : {}) };
    const spec = validate(accountCreateSchema, raw, { name: '<name>', id: '--id', technicalEmail: '--email' }, create);
    const account = await api(create).create(spec);
    print(opts.json, account, accountText(account));
    ctx.note(`created account ${account.id}; give it a key with: herald keys create ${account.id} --name <name>`);
  });

  const update = withJson(
    group
      .command('update')
      .argument('<id>', 'account id')
      .description("change an account's name, technical email or allowed topics (operator only)")
      .option('--name <name>', 'its new name')
      .option('--email <email>', 'its new technical email')
      .option('--no-email', 'remove its technical email')
      .option('--allowed-topic <topic>', 'a topic its destinations may publish to, projects/P/topics/T, or a prefix, projects/P/topics/acme-* (repeat for several; replaces the list)', collect)
      .option('--no-allowed-topics', 'remove its allowed topics: none of its destinations may then publish to a topic'),
  );
  connectionOptions(update, 'admin', { account: 'ignore' });
  update.addHelpText(
    'after',
    `
Allowed topics are the operator's alone: an account's destinations may publish only to those
topics (checked when a destination is registered and again at each publish; a destination whose
topic leaves the list is suspended). Herald's own topics are never allowed.

Example:
  herald accounts update acme --allowed-topic 'projects/acme-prod/topics/acme-*'`,
  );
  update.action(async (id: string) => {
    const opts = update.opts<{ name?: string; email?: string | false; allowedTopic?: string[]; allowedTopics?: boolean; json?: boolean }>();
    if (opts.allowedTopics === false && opts.allowedTopic !== undefined) throw usageError(update, [{ path: '--no-allowed-topics', message: 'give --allowed-topic or --no-allowed-topics, not both' }]);
    const topics = opts.allowedTopics === false ? false : opts.allowedTopic;
    const options = validate(updateOptionsSchema, { id, name: opts.name, email: opts.email, topics }, ID_ARG, update);
    const patch = issuesOf(
      accountPatchSchema,
      {
        ...(options.name !== undefined ? { name: options.name } : {}),
        ...(options.email !== undefined ? { technicalEmail: options.email === false ? null : options.email } : {}),
        ...(options.topics !== undefined ? { allowedTopics: options.topics === false ? null : options.topics } : {}),
      },
      { technicalEmail: '--email', allowedTopics: '--allowed-topic' },
    );
    if (!patch.ok) throw usageError(update, patch.issues);
    const account = await api(update).update(options.id, patch.data);
    print(opts.json, account, accountText(account));
    ctx.note(`updated account ${account.id}`);
  });

  const remove = group.command('delete').argument('<id>', 'account id').description('delete an account that has no destinations left, with its keys and everything stored under it; its id is never reused (operator only)');
  connectionOptions(remove, 'admin', { account: 'ignore' });
  remove.action(async (id: string) => {
    const schema = z.object({ id: accountIdSchema.refine((a) => a !== DEFAULT_ACCOUNT, 'the account "default" always exists and cannot be deleted') });
    const input = validate(schema, { id }, ID_ARG, remove);
    const conflict = `remove its destinations first; list them with: herald destinations list --account ${input.id}`;
    // A 404 here is always Herald's "no account", which the client has already said in the CLI's words.
    await naming(() => api(remove).delete(input.id), { what: `no account ${JSON.stringify(input.id)}`, hint: 'see the accounts there are with: herald accounts list' }, conflict);
    ctx.note(`deleted account ${input.id} with its keys and data; its id is never used again`);
  });

  registerSettings(group, ctx, api);
}

function registerSettings(group: Command, ctx: CommandContext, api: (command: Command) => AccountsApi): void {
  const settings = group
    .command('settings')
    .argument('<id>', 'account id')
    .description("show an account's settings, or change them with --failure-policy")
    .option('--failure-policy <policy>', `what a failed delivery does when its destination has no failureMode of its own: ${FAILURE_POLICIES.join(' or ')}`)
    .option('--json', 'print the settings as Herald answered them ({} when never set)');
  connectionOptions(settings, 'admin', { account: 'ignore' });
  settings.addHelpText(
    'after',
    `
retry (the default) retries a failed delivery under its destination's policy; queue keeps
it QUEUED for the account to fetch or redeliver. A change reaches new failures within
HERALD_DESTINATION_CACHE_MS (10 s). An account key with "write" may change its own.

Examples:
  herald accounts settings acme
  herald accounts settings acme --failure-policy queue`,
  );
  settings.action(async (id: string) => {
    const opts = settings.opts<{ failurePolicy?: string; json?: boolean }>();
    const input = validate(z.object({ id: accountIdSchema, failurePolicy: failurePolicySchema.optional() }), { id, failurePolicy: opts.failurePolicy }, ID_ARG, settings);
    const accounts = api(settings);
    const now = input.failurePolicy === undefined ? await accounts.settings(input.id) : await accounts.changeSettings(input.id, { [FAILURE_POLICY_SETTING]: input.failurePolicy });
    if (opts.json) ctx.json(now);
    else ctx.out(settingsText(now));
    if (input.failurePolicy !== undefined) ctx.note(`account ${input.id}: failure policy ${input.failurePolicy}; destinations without a failureMode of their own follow it for new failures within 10 s`);
  });
}
