import { Readable } from 'node:stream';
import { run } from '../../apps/cli/main';

/** The CLI in-process with a fake server: what it printed, what it sent, its exit code. */

export interface Sent {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: Buffer | undefined;
}

export function harness(answer: (req: Sent) => Response | Promise<Response> = () => Response.json({ accepted: ['x'] }, { status: 202 })) {
  const out: string[] = [];
  const err: string[] = [];
  const sent: Sent[] = [];
  const fetchStub = (async (url: string | URL, init?: RequestInit) => {
    const body = init?.body;
    const req: Sent = {
      url: String(url),
      method: init?.method ?? 'GET',
      headers: Object.fromEntries(new Headers(init?.headers).entries()),
      body: body === undefined || body === null ? undefined : Buffer.from(body as string | Buffer),
    };
    sent.push(req);
    return answer(req);
  }) as typeof fetch;
  return {
    out,
    err,
    sent,
    stdout: () => out.join(''),
    stderr: () => err.join(''),
    run: (argv: string[], opts: { env?: Record<string, string>; stdin?: string } = {}) =>
      run(argv, {
        stdout: { write: (s: string) => out.push(s) },
        stderr: { write: (s: string) => err.push(s) },
        env: opts.env ?? { HERALD_ADMIN_TOKEN: 'admin-token', HERALD_INGEST_TOKEN: 'ingest-token' },
        ...(opts.stdin !== undefined ? { stdin: Readable.from([Buffer.from(opts.stdin)]) } : {}),
        fetch: fetchStub,
      }),
  };
}

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** The CLI in-process against a real stack: `env` names the stack's URL and tokens; stdin empty unless given. */
export async function runCli(argv: string[], env: Record<string, string>, stdin = ''): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const code = await run(argv, {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    env,
    stdin: Readable.from(stdin === '' ? [] : [Buffer.from(stdin)]),
  });
  return { code, stdout, stderr };
}

/** What `npm start` prints for a stack (its URL and both tokens), with `overrides` on top. */
export function stackEnv(stack: { url: string; config: { adminToken: string; ingestToken: string } }, overrides: Record<string, string> = {}): Record<string, string> {
  return { HERALD_URL: stack.url, HERALD_ADMIN_TOKEN: stack.config.adminToken, HERALD_INGEST_TOKEN: stack.config.ingestToken, ...overrides };
}
