import { readFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import zlib from 'node:zlib';
import { spawnLocalHerald, LocalHerald } from '../support/local-herald';
import { testSecretsKey } from '../support/stack';

/**
 * What an unauthenticated or hostile body costs Herald (functions/request-gate.ts,
 * bounded-body.ts), measured black-box against `npm start` in a process of its own: a refused
 * caller is answered before its body is sent, a compressed body is inflated only up to the
 * limit, a body that never comes is cut off, and Herald's peak RSS under 100 concurrent gzip
 * bombs stays bounded with and without a token.
 */

const PROJECT = `request-gate-${Date.now().toString(36)}`;
const ENV = {
  HERALD_ADMIN_TOKEN: 'request-gate-admin-token-0123456789',
  HERALD_INGEST_TOKEN: 'request-gate-ingest-token-0123456789',
  HERALD_PUSH_TOKEN: 'request-gate-push-token-0123456789',
  HERALD_SECRETS_KEY: testSecretsKey(PROJECT),
  HERALD_BODY_TIMEOUT_MS: '1500',
};
const MIB = 1024 * 1024;

let herald: LocalHerald;
let url: string;
let port: number;

beforeAll(async () => {
  herald = spawnLocalHerald({ ...process.env, ...ENV, HERALD_PROJECT_ID: PROJECT, PORT: '0', HERALD_LOG_LEVEL: 'ERROR' });
  url = await herald.ready(90_000);
  port = Number(new URL(url).port);
}, 120_000);

afterAll(async () => {
  herald.child.kill('SIGTERM');
  await herald.exited;
}, 30_000);

/** A gzip body of `members` × 1 MiB of zeros, about 1 KB compressed per MiB inflated (gzip members concatenated). */
function gzipBomb(inflatedMiB: number): Buffer {
  const member = zlib.gzipSync(Buffer.alloc(MIB));
  return Buffer.concat(Array.from({ length: inflatedMiB }, () => member));
}

/** Peak and current resident memory of Herald's process (kB), from the kernel. */
function memoryOf(pid: number): { peakKb: number; rssKb: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]);
  return { peakKb: field('VmHWM'), rssKb: field('VmRSS') };
}

/**
 * Sends the head of a request and only `sentBytes` of the body it announces, then waits for an
 * answer: a door that reads the body first never answers, which fails the test.
 */
function answerBeforeBody(path: string, headers: Record<string, string>, announcedBytes: number, sentBytes: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let received = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer to ${path} with ${sentBytes} of ${announcedBytes} bytes sent`));
    }, 8_000);
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
      const head = received.indexOf('\r\n\r\n');
      const length = Number(/\r\ncontent-length: (\d+)/i.exec(received)?.[1] ?? NaN);
      if (head >= 0 && received.length - head - 4 >= length) {
        clearTimeout(timer);
        socket.destroy();
        resolve({ status: Number(received.slice(9, 12)), body: received.slice(head + 4, head + 4 + length) });
      }
    });
    socket.on('error', () => undefined);
    const lines = [`POST ${path} HTTP/1.1`, `host: 127.0.0.1:${port}`, `content-length: ${announcedBytes}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
    socket.write(`${lines.join('\r\n')}\r\n\r\n`);
    socket.write(Buffer.alloc(sentBytes, 0x7b));
  });
}

/** One whole request; the status, or 0 when the connection closed before an answer. */
function send(path: string, headers: Record<string, string>, body: Buffer): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    const req = http.request(`${url}${path}`, { method: 'POST', headers: { ...headers, 'content-length': String(body.length) }, agent: false }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      res.on('error', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('error', () => resolve({ status: 0, body: '' }));
    req.end(body);
  });
}

const ingestToken = { authorization: `Bearer ${ENV.HERALD_INGEST_TOKEN}` };
const structured = { 'content-type': 'application/cloudevents+json' };

describe('a caller without a valid token', () => {
  test('is answered 401 at ingest after 1 KB of a 10 MB body, without the rest being sent', async () => {
    const reply = await answerBeforeBody('/ingest', structured, 10 * MIB, 1024);
    expect(reply.status).toBe(401);
    expect(JSON.parse(reply.body)).toEqual({ error: expect.stringMatching(/bearer token/) });
  });

  test('is answered 401 by the admin API and by a push function the same way', async () => {
    expect((await answerBeforeBody('/admin/destinations/x', { 'content-type': 'application/json', authorization: 'Bearer hk_nothing' }, 10 * MIB, 1024)).status).toBe(401);
    expect((await answerBeforeBody('/deliver', { 'content-type': 'application/json' }, 10 * MIB, 1024)).status).toBe(401);
  });

  test('gets 401, not a complaint about its body, for a corrupt gzip body', async () => {
    const reply = await send('/ingest', { ...structured, 'content-encoding': 'gzip' }, Buffer.from('not gzip at all'));
    expect(reply.status).toBe(401);
  });
});

describe('an admitted caller', () => {
  test('has a gzip body inflated only up to the limit: 413 naming the inflated size', async () => {
    const reply = await send('/ingest', { ...ingestToken, ...structured, 'content-encoding': 'gzip' }, gzipBomb(64));
    expect(reply.status).toBe(413);
    expect(JSON.parse(reply.body)).toMatchObject({ error: expect.stringMatching(/inflated over the 1048576-byte limit/) });
  });

  test('has a brotli and a deflate bomb refused the same way', async () => {
    const zeros = Buffer.alloc(16 * MIB);
    for (const [encoding, body] of [['br', zlib.brotliCompressSync(zeros)], ['deflate', zlib.deflateSync(zeros)]] as const) {
      const reply = await send('/ingest', { ...ingestToken, ...structured, 'content-encoding': encoding }, body);
      expect({ encoding, status: reply.status }).toEqual({ encoding, status: 413 });
    }
  });

  test('has a compressed event accepted as it was sent', async () => {
    const event = { specversion: '1.0', id: 'gz-1', source: '/request-gate', type: 'com.example.gzip', data: { hi: 1 } };
    const reply = await send('/ingest', { ...ingestToken, ...structured, 'content-encoding': 'gzip' }, zlib.gzipSync(JSON.stringify(event)));
    expect(reply.status).toBe(202);
    expect(JSON.parse(reply.body)).toEqual({ accepted: ['gz-1'] });
  });

  test('is refused 415 for an encoding Herald does not inflate', async () => {
    const reply = await send('/ingest', { ...ingestToken, ...structured, 'content-encoding': 'compress' }, Buffer.from('x'));
    expect(reply.status).toBe(415);
    expect(reply.body).toMatch(/identity, gzip/);
  });

  test('is refused 413 at once when it announces more than the limit', async () => {
    const reply = await answerBeforeBody('/ingest', { ...ingestToken, ...structured }, 256 * MIB, 10);
    expect(reply.status).toBe(413);
  });

  test('whose body never comes in full is cut off by the body timeout: 408', async () => {
    const reply = await answerBeforeBody('/ingest', { ...ingestToken, ...structured }, 500_000, 10);
    expect(reply.status).toBe(408);
    expect(reply.body).toMatch(/did not arrive within 1500 ms/);
  });
});

describe("Herald's memory under 100 concurrent 1 MB gzip bombs (each 1 GiB inflated)", () => {
  const BOMBS = Number(process.env.REQUEST_GATE_BOMBS ?? 100);
  const bomb = gzipBomb(1024);

  async function burst(headers: Record<string, string>): Promise<{ statuses: Record<number, number>; growthMiB: number }> {
    const before = memoryOf(herald.child.pid!);
    const replies = await Promise.all(Array.from({ length: BOMBS }, () => send('/ingest', { ...headers, ...structured, 'content-encoding': 'gzip' }, bomb)));
    const after = memoryOf(herald.child.pid!);
    const statuses: Record<number, number> = {};
    for (const r of replies) statuses[r.status] = (statuses[r.status] ?? 0) + 1;
    const growthMiB = Math.max(0, after.peakKb - Math.max(before.peakKb, before.rssKb)) / 1024;
    process.stdout.write(`request-gate: ${BOMBS} bombs ${headers.authorization ? 'with' : 'without'} a token: peak RSS ${(before.peakKb / 1024).toFixed(0)} → ${(after.peakKb / 1024).toFixed(0)} MiB; answers ${JSON.stringify(statuses)}\n`);
    return { statuses, growthMiB };
  }

  test('without a token: every one 401, peak RSS grows by under 64 MiB', async () => {
    const { statuses, growthMiB } = await burst({});
    expect(statuses).toEqual({ 401: BOMBS });
    expect(growthMiB).toBeLessThan(64);
  }, 120_000);

  test('with a token: every one 413, peak RSS grows by under 256 MiB (at most ~1 MiB inflated each)', async () => {
    const { statuses, growthMiB } = await burst(ingestToken);
    expect(statuses).toEqual({ 413: BOMBS });
    expect(growthMiB).toBeLessThan(256);
  }, 120_000);
});
