import http from 'node:http';
import { AddressInfo } from 'node:net';
import * as functions from '@google-cloud/functions-framework';
import { getTestServer } from '@google-cloud/functions-framework/testing';
import { guarded, sendOutcome } from '../../functions/http';
import type { AnyOutcome } from '../../shared/app/support/outcome';
import { createLogger } from '../../shared/log';
import { LimiterClosedError } from '../../shared/app/rate/limiter-gate';
import { BeforeSendError } from '../../shared/app/delivery/push-verdict';

// eslint-disable-next-line @typescript-eslint/no-require-imports
import domain = require('node:domain');

const lines: string[] = [];
const log = createLogger({ write: (line) => lines.push(line) });
const seen: { atStart?: unknown; afterAwait?: unknown } = {};
const domainOf = () => (process as { domain?: unknown }).domain ?? undefined;

functions.http(
  'guarded-probe',
  guarded(
    () => log,
    'probe',
    async (req, res) => {
      seen.atStart = domainOf();
      await new Promise((r) => setTimeout(r, 1));
      seen.afterAwait = domainOf();
      if (req.path === '/fail') throw new Error('boom');
      if (req.path === '/stopping') throw new LimiterClosedError();
      // As a delivery's gate throws it: typed by its stage (shared/app/delivery/push-verdict.ts).
      if (req.path === '/stopping-at-gate') throw new BeforeSendError(new LimiterClosedError());
      res.status(204).end();
    },
  ),
);

async function call(path: string): Promise<{ status: number; body: string }> {
  const server = getTestServer('guarded-probe');
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  try {
    const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`, { method: 'POST' });
    return { status: res.status, body: await res.text() };
  } finally {
    await new Promise<void>((r) => (server as http.Server).close(() => r()));
  }
}

describe('guarded handlers under the functions framework', () => {
  it("run outside any domain, before and after an await: the framework's per-request domain is never created", async () => {
    expect((await call('/')).status).toBe(204);
    expect(seen.atStart).toBeUndefined();
    expect(seen.afterAwait).toBeUndefined();
    // A real domain would turn Node's domain async hook on for the rest of the process (a destroy hook per promise).
    expect(domain.create()).not.toBeInstanceOf(domain.Domain);
  });

  it('still answer a fault with a logged 500 in JSON', async () => {
    const reply = await call('/fail');
    expect(reply.status).toBe(500);
    expect(JSON.parse(reply.body)).toEqual({ error: 'internal error in probe; it has been logged, retry later' });
    expect(lines.some((l) => /"message":"probe failed"/.test(l) && /boom/.test(l))).toBe(true);
  });

  it('answer a delivery given up because Herald is stopping with 503, logged as news, not as a fault', async () => {
    const reply = await call('/stopping');
    expect(reply.status).toBe(503);
    expect(JSON.parse(reply.body)).toEqual({ error: 'Herald is shutting down: the delivery was not attempted (Pub/Sub brings it again)' });
    const line = lines.find((l) => /shutting down/.test(l));
    expect(line && JSON.parse(line)).toMatchObject({ severity: 'INFO', message: 'probe: Herald is shutting down: the delivery was not attempted (Pub/Sub brings it again)' });
  });

  it('answer the same when the stop reached a delivery at its gate, wrapped in its stage', async () => {
    const reply = await call('/stopping-at-gate');
    expect(reply.status).toBe(503);
    expect(JSON.parse(reply.body)).toEqual({ error: 'Herald is shutting down: the delivery was not attempted (Pub/Sub brings it again)' });
  });
});

describe('an outcome as an answer', () => {
  async function answer(outcome: AnyOutcome): Promise<Response> {
    const server = http.createServer((_req, res) => sendOutcome(res, outcome));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    try {
      return await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    } finally {
      server.close();
    }
  }

  it('says when to come back on a 503 that knows (the store or Pub/Sub busy), as on a 429', async () => {
    const busy = await answer({ kind: 'unavailable', retryAfterSeconds: 1, body: { error: 'resend' } });
    expect(busy.status).toBe(503);
    expect(busy.headers.get('retry-after')).toBe('1');
    const quota = await answer({ kind: 'too-many', retryAfterSeconds: 3, body: { error: 'over quota' } });
    expect([quota.status, quota.headers.get('retry-after')]).toEqual([429, '3']);
  });

  it('gives no Retry-After where coming back soon would not help (a setting is missing)', async () => {
    const unset = await answer({ kind: 'unavailable', body: { error: 'set HERALD_CONSOLE_URL' } });
    expect(unset.status).toBe(503);
    expect(unset.headers.get('retry-after')).toBeNull();
  });
});
