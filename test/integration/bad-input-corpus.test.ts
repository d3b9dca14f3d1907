import http from 'node:http';
import net from 'node:net';
import { FunctionName } from '../../shared/topology';
import { CorpusCase, corpusRequests, INTERNAL } from '../corpus/bad-input';
import { Receiver } from '../support/receiver';
import { startTestStack, TestStack } from '../support/stack';

/**
 * The bad-input corpus (test/corpus/bad-input.ts) against every HTTP function of a real local
 * stack: each request answered with the expected 4xx and a JSON body that says what is wrong,
 * the stack still serving afterwards, and no token or signing secret in any log line.
 */

const RUN = Date.now().toString(36);
let stack: TestStack;
const receiver = new Receiver();
const secrets: string[] = [];

type Reply = { status: number; contentType: string | undefined; body: unknown };

/** A raw request: the corpus controls the method, the header bytes and the body exactly. */
function send(c: CorpusCase, fn: FunctionName): Promise<Reply> {
  const headers: Record<string, string> = { ...c.headers };
  const query: string[] = c.query ? [c.query] : [];
  const { adminToken, ingestToken } = stack.config;
  const pushToken = stack.config.pushToken!;
  const own = fn === 'admin' ? adminToken : fn === 'ingest' ? ingestToken : pushToken;
  const credential = c.credentials === 'right' ? own : c.credentials === 'wrong' ? 'herald_not_a_real_token_0123456789' : c.credentials === 'other' ? (fn === 'admin' ? ingestToken : adminToken) : undefined;
  if (credential !== undefined) {
    if ((INTERNAL as readonly string[]).includes(fn)) query.push(`token=${encodeURIComponent(credential)}`);
    else headers.authorization = `Bearer ${credential}`;
  }
  const base = fn === 'admin' ? `/admin${c.path?.admin ?? '/destinations/corpus'}` : `/${fn}${c.path?.[fn] ?? ''}`;
  const path = query.length ? `${base}${base.includes('?') ? '&' : '?'}${query.join('&')}` : base;
  const body = c.body === undefined ? undefined : Buffer.isBuffer(c.body) ? c.body : Buffer.from(c.body);
  const method = c.method ?? (fn === 'admin' ? 'PUT' : 'POST');
  if (c.raw) return sendRaw(method, path, headers, body);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: stack.port, method, path, headers: { ...headers, ...(body ? { 'content-length': String(body.length) } : {}) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed: unknown = text;
        try {
          parsed = text ? JSON.parse(text) : undefined;
        } catch {
          /* the assertions say what was wrong */
        }
        resolve({ status: res.statusCode ?? 0, contentType: res.headers['content-type'], body: parsed });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** The request written as bytes (Connection: close), the answer read to the end. */
function sendRaw(method: string, path: string, headers: Record<string, string>, body: Buffer | undefined): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(stack.port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('end', () => {
      const text = Buffer.concat(chunks).toString('latin1');
      const [head = '', rest = ''] = text.split('\r\n\r\n');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
      const contentType = /^content-type: *(.*)$/im.exec(head)?.[1]?.trim();
      let parsed: unknown = rest;
      try {
        parsed = JSON.parse(rest);
      } catch {
        /* the assertions say what was wrong */
      }
      resolve({ status, contentType, body: parsed });
    });
    const lines = [`${method} ${path} HTTP/1.1`, 'host: 127.0.0.1', 'connection: close', ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`), `content-length: ${body?.length ?? 0}`];
    socket.end(Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), body ?? Buffer.alloc(0)]));
  });
}

beforeAll(async () => {
  await receiver.start();
  stack = await startTestStack(`corpus-${RUN}`);
  // A destination, so that a signing secret exists in this run (the log scan looks for it).
  const res = await stack.admin('PUT', '/destinations/corpus', { url: `${receiver.url}/corpus`, eventTypes: ['corpus.never'] });
  expect(res.status).toBe(201);
  secrets.push((res.body as { secret: string }).secret);
});

afterAll(async () => {
  await stack?.stop({ purge: true });
  await receiver.stop();
});

describe('every case of the corpus, at every function it names', () => {
  test.each(corpusRequests().map(({ c, fn }) => [fn, c.name, c]))('%s: %s', async (fn, _name, c) => {
    const expected = c.per?.[fn as FunctionName] ?? c.expect;
    const reply = await send(c, fn as FunctionName);
    expect({ status: reply.status, body: reply.body }).toEqual({ status: expected.status, body: expect.objectContaining({ error: expect.stringMatching(expected.error ?? /./) as string }) as unknown });
    expect(reply.status).toBeGreaterThanOrEqual(400);
    expect(reply.status).toBeLessThan(500);
    expect(reply.contentType).toMatch(/^application\/json/);
  });
});

describe('after the corpus', () => {
  test('Herald still serves: healthy, and a valid event is accepted', async () => {
    const health = await fetch(`${stack.url}/healthz`);
    expect(health.status).toBe(200);
    const res = await stack.ingest({ 'ce-id': 'after-corpus', 'ce-source': '/corpus', 'ce-type': 'corpus.test', 'ce-specversion': '1.0', 'content-type': 'application/json' }, '{"ok":true}');
    expect(res).toEqual({ status: 202, body: { accepted: ['after-corpus'] } });
  });

  test('no crash was logged, and no log line holds a token or a signing secret', () => {
    const lines = stack.logs.map((l) => JSON.stringify(l));
    expect(lines.filter((l) => /failed","|internal error/.test(l))).toEqual([]);
    const { adminToken, ingestToken } = stack.config;
    const values = [adminToken, ingestToken, stack.config.pushToken!, ...secrets, ...secrets.map((s) => s.slice(6))];
    expect(values.filter((v) => lines.some((l) => l.includes(v)))).toEqual([]);
    expect(lines.filter((l) => /whsec_|Bearer /.test(l))).toEqual([]);
  });
});
