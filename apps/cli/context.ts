import { Command } from 'commander';
import { z } from 'zod';
import { HeraldClient } from './client';
import { ACCOUNT_ENV, accountIdSchema, Api, API_KEY_ENV, credentialSchema, nonEmpty, pickAccount, pickCredential } from './credentials';
import { Issue, UsageError } from './errors';

/** What a CLI run talks to: the process's streams and environment, or a test's. */
export interface CliIo {
  stdout: { write(chunk: string): unknown };
  /** A terminal (isTTY) gets progress bars; anything else, plain lines. */
  stderr: { write(chunk: string): unknown; isTTY?: boolean };
  env: Record<string, string | undefined>;
  /** Read for `-` (data from stdin). */
  stdin?: AsyncIterable<Buffer | string>;
  /** Defaults to the global fetch. */
  fetch?: typeof fetch;
}

export const DEFAULT_URL = 'http://127.0.0.1:8080';

/** What every command gets: output helpers and a client built from the connection options. */
export class CommandContext {
  constructor(readonly io: CliIo) {}

  out(line = ''): void {
    this.io.stdout.write(`${line}\n`);
  }

  /** Notes for people (stderr), so stdout stays what a script pipes on. */
  note(line: string): void {
    this.io.stderr.write(`${line}\n`);
  }

  json(value: unknown): void {
    this.out(JSON.stringify(value, null, 2));
  }

  /** The client for one API; see connect(). */
  client(command: Command, api: Api): HeraldClient {
    return this.connect(command, api).client;
  }

  /**
   * The client for one API, and the account the command acts in (if any). Each setting
   * comes from the command's own flag (its --url only where it means Herald), then the
   * root's (`herald --url … destinations list`), then the environment, then the default;
   * the credential by the rule in credentials.ts. Everything wrong is reported at once.
   */
  connect(command: Command, api: Api): { client: HeraldClient; account?: string } {
    const own = command.opts<ConnectionOptions>();
    const root = rootOf(command).opts<ConnectionOptions>();
    const flagUrl = (CONNECTION_URL.has(command) ? own.url : undefined) ?? root.url;
    const envUrl = nonEmpty(this.io.env.HERALD_URL);
    const tokenKey = api === 'admin' ? 'adminToken' : 'ingestToken';
    const credential = pickCredential(api, { token: own[tokenKey] ?? root[tokenKey], apiKey: own.apiKey ?? root.apiKey }, this.io.env);
    const use = ACCOUNT_USE.get(command) ?? 'ignore';
    const picked = use === 'ignore' ? undefined : pickAccount(own.account ?? root.account, this.io.env);
    const connection = validate(
      z.object({ url: urlSchema, token: credentialSchema(credential.kind), account: accountIdSchema.optional() }),
      { url: flagUrl ?? envUrl ?? DEFAULT_URL, token: credential.token, account: picked?.account },
      { url: flagUrl === undefined && envUrl !== undefined ? 'HERALD_URL' : '--url', token: credential.source, account: picked?.name ?? '--account' },
      command,
    );
    const account = connection.account;
    const client = new HeraldClient({
      baseUrl: connection.url,
      credentials: { [api]: { ...credential, token: connection.token } },
      // Publishing names the account in each event, not in the path.
      ...(account !== undefined && api === 'admin' ? { account } : {}),
      ...(this.io.fetch ? { fetch: this.io.fetch } : {}),
    });
    return { client, ...(account !== undefined ? { account } : {}) };
  }
}

/** Commands whose own --url is Herald's URL (not, as in `destinations add`, a webhook's). */
const CONNECTION_URL = new WeakSet<Command>();

/**
 * What a command does with --account / HERALD_ACCOUNT: acts in that account (`path`: its
 * paths go under /admin/accounts/{id}, or publish stamps its events), or has no use for it
 * (`ignore`: accounts and keys name the account as an argument).
 */
export type AccountUse = 'path' | 'ignore';
const ACCOUNT_USE = new WeakMap<Command, AccountUse>();

interface ConnectionOptions {
  url?: string;
  adminToken?: string;
  ingestToken?: string;
  apiKey?: string;
  account?: string;
}

const urlSchema = z
  .string()
  .refine((u) => /^https?:\/\/[^/]/i.test(u) && URL.canParse(u), 'must be an http(s) URL such as http://127.0.0.1:8080')
  .transform((u) => u.replace(/\/+$/, ''));

export const API_KEY_HELP = `account key, hk_… (env ${API_KEY_ENV}): acts for its own account`;
export const ACCOUNT_HELP = `act in this account: /admin/accounts/<id>/… (env ${ACCOUNT_ENV}; default: the key's own account, or "default" with the admin token)`;
const PUBLISH_ACCOUNT_HELP = `publish for this account: sets the heraldaccount attribute (env ${ACCOUNT_ENV}); a key publishes for its own account only`;

/**
 * Adds the connection options to a command: `url: false` where --url means something else;
 * `account` says what the command does with --account (see AccountUse).
 */
export function connectionOptions(command: Command, api: Api, { url = true, account = 'path' as AccountUse } = {}): Command {
  if (url) {
    command.option('--url <url>', `Herald's base URL (env HERALD_URL, default ${DEFAULT_URL})`);
    CONNECTION_URL.add(command);
  }
  if (api === 'admin') command.option('--admin-token <token>', 'admin API token (env HERALD_ADMIN_TOKEN)');
  else command.option('--ingest-token <token>', 'ingest token (env HERALD_INGEST_TOKEN)');
  command.option('--api-key <key>', API_KEY_HELP);
  if (account === 'path') command.option('--account <id>', api === 'admin' ? ACCOUNT_HELP : PUBLISH_ACCOUNT_HELP);
  ACCOUNT_USE.set(command, account);
  return command;
}

export function rootOf(command: Command): Command {
  let c = command;
  while (c.parent) c = c.parent;
  return c;
}

/** `herald destinations add`, for messages. */
export function commandPath(command: Command): string {
  const names: string[] = [];
  for (let c: Command | null = command; c; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

/** Zod issues as the user typed things: `names` maps schema keys to flags or <args>. */
export function issuesOf<S extends z.ZodType>(schema: S, raw: unknown, names: Record<string, string>): { ok: true; data: z.output<S> } | { ok: false; issues: Issue[] } {
  const parsed = schema.safeParse(raw);
  if (parsed.success) return { ok: true, data: parsed.data };
  const issues = parsed.error.issues.map((i) => {
    const [head, ...rest] = i.path.map(String);
    const flag = head === undefined ? 'arguments' : (names[head] ?? `--${head.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`);
    // The domain's messages name the API field ("policy must be …"); the flag says it already.
    const message = head !== undefined && i.message.startsWith(`${head} `) ? i.message.slice(head.length + 1) : i.message;
    return { path: [flag, ...rest].join('.'), message };
  });
  return { ok: false, issues };
}

export function usageError(command: Command, issues: Issue[]): UsageError {
  const path = commandPath(command);
  return new UsageError(`invalid arguments for ${path}`, issues, `run "${path} --help" for usage`);
}

/**
 * Zod at the edge: parses a command's raw options into typed input, or throws a usage
 * error naming each bad flag.
 */
export function validate<S extends z.ZodType>(schema: S, raw: unknown, names: Record<string, string>, command: Command): z.output<S> {
  const result = issuesOf(schema, raw, names);
  if (!result.ok) throw usageError(command, result.issues);
  return result.data;
}
