import { Webhook } from 'standardwebhooks';
import { run } from '../../apps/cli/main';
import { FunctionName, INTERNAL_FUNCTIONS } from '../../shared/topology';
import { TestIssuer } from '../support/oidc';
import { Receiver, ReceivedRequest } from '../support/receiver';
import { startTestStack, TestStack } from '../support/stack';

/**
 * Issue 8's security half on the emulators: secret rotation (both signatures verify with the
 * standardwebhooks verifier, each with its own secret), the internal endpoints refusing
 * unauthenticated requests in token mode (local) and in OIDC mode (GCP, with a local issuer
 * standing in for Google's), and no secret in any log line of either run.
 *
 * Two stacks, one after the other (local mode installs one runtime per process), each in a
 * project of its own per run.
 */

const RUN = Date.now().toString(36);
const SOURCE = '/security-test';
const receiver = new Receiver();

type Reply = { status: number; headers: Headers; body: unknown };

async function call(stack: TestStack, method: string, path: string, headers: Record<string, string> = {}, body?: string): Promise<Reply> {
  const res = await fetch(`${stack.url}${path}`, { method, headers, ...(body !== undefined ? { body } : {}) });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    /* keep the text */
  }
  return { status: res.status, headers: res.headers, body: parsed };
}

/** Every value in `secrets` that appears anywhere in the captured log lines. */
function leaked(stack: TestStack, secrets: string[]): string[] {
  const text = stack.logs.map((l) => JSON.stringify(l)).join('\n');
  return secrets.filter((s) => s.length > 0 && text.includes(s));
}

const ENVELOPE = JSON.stringify({ subscription: 'projects/p/subscriptions/s', message: { messageId: 'm-1', publishTime: new Date().toISOString(), attributes: {}, data: 'not base64!' } });

beforeAll(async () => {
  await receiver.start();
});

afterAll(async () => {
  await receiver.stop();
});

describe('local mode (push token)', () => {
  let stack: TestStack;
  const secrets: string[] = [];
  const event = (id: string) =>
    stack.ingest({ 'ce-id': id, 'ce-source': SOURCE, 'ce-type': 'security.rotation', 'ce-specversion': '1.0', 'content-type': 'application/json' }, `{"id":"${id}"}`);
  const received = async (id: string): Promise<ReceivedRequest> => {
    const n = receiver.requests.length;
    expect((await event(id)).status).toBe(202);
    await receiver.waitFor(n + 1, '/hooks');
    return receiver.on('/hooks').find((r) => r.headers['ce-id'] === id)!;
  };
  const verifies = (req: ReceivedRequest, secret: string): boolean => {
    try {
      new Webhook(secret).verify(req.body, req.headers as Record<string, string>, { jsonParse: false });
      return true;
    } catch {
      return false;
    }
  };
  const rotate = async (body: unknown) => {
    const res = await stack.admin('POST', '/destinations/hooks/rotate-secret', body);
    expect(res.status).toBe(200);
    const secret = (res.body as { secret: string }).secret;
    secrets.push(secret);
    return res.body as { secret: string; previousSecrets?: { expiresAt: string }[] };
  };

  beforeAll(async () => {
    stack = await startTestStack(`security-${RUN}`);
    const res = await stack.admin('PUT', '/destinations/hooks', { url: `${receiver.url}/hooks`, eventTypes: ['security.rotation'] });
    expect(res.status).toBe(201);
    secrets.push((res.body as { secret: string }).secret);
  });

  afterAll(async () => {
    await stack?.stop({ purge: true });
  });

  describe('secret rotation', () => {
    test('before: one signature, the secret given at creation', async () => {
      const req = await received('before');
      expect(String(req.headers['webhook-signature']).split(' ')).toHaveLength(1);
      expect(verifies(req, secrets[0]!)).toBe(true);
    });

    test('rotate-secret answers the new secret once, and shows only until when the old one signs', async () => {
      const body = await rotate({ graceSeconds: 3600 });
      expect(body.secret).toMatch(/^whsec_/);
      expect(body.secret).not.toBe(secrets[0]);
      expect(body.previousSecrets).toHaveLength(1);
      expect(JSON.stringify(body)).not.toContain(secrets[0]!.slice(6));
      const shown = await stack.admin('GET', '/destinations/hooks');
      expect(JSON.stringify(shown.body)).not.toMatch(/whsec_/);
      expect((shown.body as { previousSecrets: unknown }).previousSecrets).toEqual(body.previousSecrets);
    });

    test('during the grace period: two signatures, and the standardwebhooks verifier accepts either secret', async () => {
      const req = await received('during');
      expect(String(req.headers['webhook-signature'])).toMatch(/^v1,\S+ v1,\S+$/);
      expect(verifies(req, secrets[0]!)).toBe(true); // the old secret
      expect(verifies(req, secrets[1]!)).toBe(true); // the new secret
      expect(verifies(req, `whsec_${Buffer.alloc(32, 7).toString('base64')}`)).toBe(false);
    });

    test('after the grace period the old secret no longer signs (dropped lazily, at delivery and on read)', async () => {
      await rotate({ graceSeconds: 1 });
      await new Promise((r) => setTimeout(r, 1100));
      const req = await received('after');
      expect(String(req.headers['webhook-signature']).split(' ')).toHaveLength(2); // secrets[2] and secrets[0]'s grace (an hour) is still on
      expect(verifies(req, secrets[2]!)).toBe(true);
      expect(verifies(req, secrets[1]!)).toBe(false);
      expect(verifies(req, secrets[0]!)).toBe(true);
      const shown = (await stack.admin('GET', '/destinations/hooks')).body as { previousSecrets: unknown[] };
      expect(shown.previousSecrets).toHaveLength(1);
    });

    test('graceSeconds 0 replaces the secret at once; the CLI rotates too', async () => {
      let stdout = '';
      let stderr = '';
      const code = await run(['destinations', 'rotate-secret', 'hooks', '--grace', '0'], {
        stdout: { write: (s: string) => (stdout += s) },
        stderr: { write: (s: string) => (stderr += s) },
        env: { HERALD_URL: stack.url, HERALD_ADMIN_TOKEN: stack.config.adminToken },
      });
      expect(code).toBe(0);
      const secret = stdout.trim();
      expect(secret).toMatch(/^whsec_/);
      secrets.push(secret);
      expect(stderr).toContain('the previous secret no longer signs');
      // A grace period still running for an older secret carries on.
      const req = await received('replaced');
      expect(verifies(req, secret)).toBe(true);
      expect(verifies(req, secrets[2]!)).toBe(false);
    });

    test.each<[string, string, unknown, number, RegExp]>([
      ['an unknown destination', '/destinations/nobody/rotate-secret', {}, 404, /no destination "nobody"/],
      ['a grace period over 30 days', '/destinations/hooks/rotate-secret', { graceSeconds: 31 * 86400 }, 400, /invalid rotate-secret request/],
      ['a secret that is not whsec_', '/destinations/hooks/rotate-secret', { secret: 'hunter2' }, 400, /invalid rotate-secret request/],
      ['an unknown field', '/destinations/hooks/rotate-secret', { grace: 10 }, 400, /invalid rotate-secret request/],
    ])('%s → %d', async (_, path, body, status, message) => {
      const res = await stack.admin('POST', path, body);
      expect(res.status).toBe(status);
      expect((res.body as { error: string }).error).toMatch(message);
    });
  });

  describe('the internal endpoints refuse requests without the push token (401)', () => {
    const paths: Partial<Record<FunctionName, string>> = { route: '/route', deliver: '/deliver', replay: '/replay', pump: '/pump?runSeconds=0', 'suspension-check': '/suspension-check' };

    test.each(INTERNAL_FUNCTIONS.map((fn) => [fn]))('%s', async (fn) => {
      const path = paths[fn]!;
      const sep = path.includes('?') ? '&' : '?';
      for (const [what, suffix, headers] of [
        ['no token', '', {}],
        ['a wrong token', `${sep}token=herald_push_not-the-right-one`, {}],
        ['the push token as a bearer header', '', { authorization: `Bearer ${stack.config.pushToken!}` }],
        ['the admin token', `${sep}token=${stack.config.adminToken}`, {}],
      ] as const) {
        const reply = await call(stack, 'POST', `${path}${suffix}`, { 'content-type': 'application/json', ...headers }, fn === 'pump' || fn === 'suspension-check' ? undefined : ENVELOPE);
        expect([what, reply.status]).toEqual([what, 401]);
        expect(reply.body).toEqual({ error: expect.stringContaining('push token') as string });
      }
      const ok = await call(stack, 'POST', `${path}${sep}token=${encodeURIComponent(stack.config.pushToken!)}`, { 'content-type': 'application/json' }, fn === 'pump' || fn === 'suspension-check' ? undefined : ENVELOPE);
      expect(ok.status).toBe(fn === 'pump' || fn === 'suspension-check' ? 200 : 400); // past authentication: the envelope is what is wrong
    });
  });

  test('no log line of this run holds a token or a signing secret', () => {
    expect(stack.logs.length).toBeGreaterThan(10);
    expect(leaked(stack, [stack.config.adminToken, stack.config.ingestToken, stack.config.pushToken!, ...secrets, ...secrets.map((s) => s.slice(6))])).toEqual([]);
    expect(stack.logs.map((l) => JSON.stringify(l)).filter((l) => /whsec_|Bearer /i.test(l))).toEqual([]);
  });
});

describe('OIDC mode (GCP): a Google-signed token of the right service account, with the function URL as audience', () => {
  let stack: TestStack;
  const issuer = new TestIssuer();
  const impostor = new TestIssuer();
  const PUSH_SA = `herald-pusher@security-${RUN}.iam.gserviceaccount.com`;
  const SCHEDULER_SA = `herald-scheduler@security-${RUN}.iam.gserviceaccount.com`;
  const tokens: string[] = [];
  const callerOf = (fn: FunctionName) => (fn === 'pump' || fn === 'suspension-check' ? SCHEDULER_SA : PUSH_SA);
  const token = (claims: Record<string, unknown>, key?: TestIssuer) => {
    const t = issuer.token(claims, key ? { key } : {});
    tokens.push(t);
    return t;
  };

  beforeAll(async () => {
    stack = await startTestStack(`security-oidc-${RUN}`, { HERALD_PUSH_SERVICE_ACCOUNT: PUSH_SA, HERALD_SCHEDULER_SERVICE_ACCOUNT: SCHEDULER_SA }, { idTokens: issuer.verifier() });
  });

  afterAll(async () => {
    await stack?.stop({ purge: true });
  });

  const post = (fn: FunctionName, headers: Record<string, string>, query = '') =>
    call(stack, 'POST', `/${fn}${query}`, { 'content-type': 'application/json', ...headers }, fn === 'pump' || fn === 'suspension-check' ? undefined : ENVELOPE);

  test.each(INTERNAL_FUNCTIONS.map((fn) => [fn]))('%s: unauthenticated or wrongly authenticated → 401; its own caller passes', async (fn) => {
    const aud = `${stack.url}/${fn}`;
    const cases: [string, Record<string, string>, string][] = [
      ['no Authorization', {}, ''],
      ['the local push token in ?token=', {}, `?token=${encodeURIComponent(stack.config.pushToken!)}`],
      ['the admin token as bearer', { authorization: `Bearer ${stack.config.adminToken}` }, ''],
      ['a token signed by another key', { authorization: `Bearer ${token({ aud, email: callerOf(fn) }, impostor)}` }, ''],
      ['a token for another function', { authorization: `Bearer ${token({ aud: `${stack.url}/admin`, email: callerOf(fn) })}` }, ''],
      ['a token of another service account', { authorization: `Bearer ${token({ aud, email: `intruder@security-${RUN}.iam.gserviceaccount.com` })}` }, ''],
      ['an expired token', { authorization: `Bearer ${token({ aud, email: callerOf(fn), iat: 1_000_000, exp: 1_003_600 })}` }, ''],
      ['a token Cloud Run stripped (this function is not behind IAM here)', { authorization: `Bearer ${issuer.stripped({ aud, email: callerOf(fn) })}` }, ''],
    ];
    for (const [what, headers, query] of cases) {
      const reply = await post(fn, headers, query);
      expect([what, reply.status]).toEqual([what, 401]);
      expect(reply.headers.get('www-authenticate')).toBe('Bearer');
      expect(reply.body).toEqual({ error: expect.stringMatching(new RegExp(`^${fn} (refused the request's OIDC token|is called by Pub/Sub or Cloud Scheduler only)`)) as string });
    }
    const ok = await post(fn, { authorization: `Bearer ${token({ aud, email: callerOf(fn) })}` }, fn === 'pump' ? '?runSeconds=0' : '');
    expect(ok.status).toBe(fn === 'pump' || fn === 'suspension-check' ? 200 : 400); // authenticated: only the test envelope is wrong
  });

  test('no log line of this run holds a token', () => {
    expect(leaked(stack, [stack.config.adminToken, stack.config.ingestToken, stack.config.pushToken!, ...tokens, ...tokens.map((t) => t.split('.')[2]!)])).toEqual([]);
    expect(stack.logs.some((l) => String(l.message).includes('unauthenticated request refused'))).toBe(true);
  });
});
