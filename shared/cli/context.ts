import { Command } from 'commander';
import { z } from 'zod';
import { Api, HeraldClient } from './client';
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

  /**
   * The client for one API. The URL comes from the command's own --url (where it means
   * Herald), then `herald --url`, HERALD_URL, the default; tokens likewise.
   */
  client(command: Command, api: Api): HeraldClient {
    const own = command.opts<ConnectionOptions>();
    const root = rootOf(command).opts<ConnectionOptions>();
    const flagUrl = (CONNECTION_URL.has(command) ? own.url : undefined) ?? root.url;
    const envUrl = nonEmpty(this.io.env.HERALD_URL);
    const tokenKey = api === 'admin' ? 'adminToken' : 'ingestToken';
    const tokenEnv = TOKEN_ENV[api];
    const flagToken = own[tokenKey] ?? root[tokenKey];
    const token = flagToken ?? nonEmpty(this.io.env[tokenEnv]);
    if (token === undefined) {
      throw new UsageError(`no ${api} token`, [], `pass --${api}-token or set ${tokenEnv} (npm start prints it)`);
    }
    const connection = validate(
      connectionSchema,
      { url: flagUrl ?? envUrl ?? DEFAULT_URL, token },
      { url: flagUrl === undefined && envUrl !== undefined ? 'HERALD_URL' : '--url', token: flagToken !== undefined ? `--${api}-token` : tokenEnv },
      command,
    );
    return new HeraldClient({
      baseUrl: connection.url,
      ...(api === 'admin' ? { adminToken: connection.token } : { ingestToken: connection.token }),
      ...(this.io.fetch ? { fetch: this.io.fetch } : {}),
    });
  }
}

const TOKEN_ENV = { admin: 'HERALD_ADMIN_TOKEN', ingest: 'HERALD_INGEST_TOKEN' } as const;

/** Commands whose own --url is Herald's URL (not, as in `destinations add`, a webhook's). */
const CONNECTION_URL = new WeakSet<Command>();

interface ConnectionOptions {
  url?: string;
  adminToken?: string;
  ingestToken?: string;
}

const nonEmpty = (v: string | undefined) => (v === undefined || v.trim() === '' ? undefined : v.trim());

const connectionSchema = z.object({
  url: z
    .string()
    .refine((u) => /^https?:\/\/[^/]/i.test(u) && URL.canParse(u), 'must be an http(s) URL such as http://127.0.0.1:8080')
    .transform((u) => u.replace(/\/+$/, '')),
  token: z.string().regex(/^\S+$/, 'must be one word with no spaces'),
});

/** Adds the connection options to a command; `url: false` where --url means something else. */
export function connectionOptions(command: Command, api: Api, { url = true } = {}): Command {
  if (url) {
    command.option('--url <url>', `Herald's base URL (env HERALD_URL, default ${DEFAULT_URL})`);
    CONNECTION_URL.add(command);
  }
  return api === 'admin'
    ? command.option('--admin-token <token>', 'admin API token (env HERALD_ADMIN_TOKEN)')
    : command.option('--ingest-token <token>', 'ingest token (env HERALD_INGEST_TOKEN)');
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
