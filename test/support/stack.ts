import { startLocalStack, LocalStack, LocalStackOptions } from '../../apps/local/stack';
import { createHash } from 'node:crypto';
import { createLogger } from '../../shared/log';

export interface TestStack extends LocalStack {
  admin(method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }>;
  /** The admin API with another bearer token: an account key, a portal session. */
  adminAs(token: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }>;
  ingest(headers: Record<string, string>, body: string | Buffer): Promise<{ status: number; body: unknown }>;
  logs: Record<string, unknown>[];
}

/**
 * A test project's HERALD_SECRETS_KEY: another for every project, and the same for every
 * stack of one project, so a second stack, a restart, or a rerun on reused emulators reads
 * what an earlier stack of the project wrote (a key made afresh for each stack would find
 * the project's earlier destinations unreadable). Test data only: derived, not secret.
 */
export function testSecretsKey(projectId: string): string {
  return createHash('sha256').update(`herald test secrets key:${projectId}`).digest('base64');
}

/**
 * A local stack on the shared test emulators, in a project of its own (`options`: a DNS or
 * OIDC stand-in; `instances: N` for N instances, each request to the next, instance i's
 * runtime at `stack.runtimes[i]` and its log lines carrying `instance: i`).
 */
export async function startTestStack(projectId: string, env: Record<string, string> = {}, options: Pick<LocalStackOptions, 'resolver' | 'idTokens' | 'instances'> = {}): Promise<TestStack> {
  const pubsubHost = process.env.PUBSUB_EMULATOR_HOST;
  const firestoreHost = process.env.FIRESTORE_EMULATOR_HOST;
  if (!pubsubHost || !firestoreHost) throw new Error('integration tests need the emulators from test/setup/global-setup.ts');
  const logs: Record<string, unknown>[] = [];
  const log = createLogger({ level: 'DEBUG', write: (line) => logs.push(JSON.parse(line) as Record<string, unknown>) });
  const stack = await startLocalStack({
    port: 0,
    emulators: { pubsubHost, firestoreHost },
    env: { ...process.env, HERALD_PROJECT_ID: projectId, HERALD_SECRETS_KEY: testSecretsKey(projectId), ...env },
    log,
    ...options,
  });
  const call = async (url: string, init: RequestInit) => {
    const res = await fetch(url, init);
    const text = await res.text();
    let body: unknown = text;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      /* keep text */
    }
    return { status: res.status, body };
  };
  const adminAs = (token: string, method: string, path: string, body?: unknown) =>
    call(`${stack.url}/admin${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
  return Object.assign(stack, {
    logs,
    admin: (method: string, path: string, body?: unknown) => adminAs(stack.config.adminToken, method, path, body),
    adminAs,
    ingest: (headers: Record<string, string>, body: string | Buffer) =>
      call(`${stack.url}/ingest`, { method: 'POST', headers: { authorization: `Bearer ${stack.config.ingestToken}`, ...headers }, body }),
  });
}
