import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { receiverFromFlags } from '../../apps/cli/receiver-flags';
import { makeThrowawayPki } from '../support/throwaway-ca';
import { harness } from '../support/cli-harness';

const dir = mkdtempSync(join(tmpdir(), 'herald-cli-receiver-'));
const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

test('the receiver file gives headers, auth and a client certificate read from @files', () => {
  const pki = makeThrowawayPki();
  const receiver = file('r.json', JSON.stringify({ headers: { 'X-Tenant': 'acme' }, auth: { type: 'basic', username: 'u', password: 'p' }, tls: { clientCertificate: `@${file('c.pem', pki.clientCert)}`, clientKey: `@${file('k.pem', pki.clientKey)}` } }));
  const r = receiverFromFlags({ receiver, signature: 'github' });
  expect(r).toMatchObject({ ok: true, receiver: { headers: { 'X-Tenant': 'acme' }, auth: { type: 'basic' }, tls: { clientCertificate: pki.clientCert }, signature: 'github' } });
});

test('problems are named by flag and path, without the value', () => {
  const receiver = file('bad.json', JSON.stringify({ headers: { 'X-A': 'line\r\nbreak-secret' }, auth: { type: 'apiKey', header: 'X-Key' } }));
  const r = receiverFromFlags({ receiver, signature: 'hmac' });
  expect(r.ok).toBe(false);
  const issues = r.ok ? [] : r.issues;
  expect(issues.map((i) => i.path).sort()).toEqual(['--receiver.auth.value', '--receiver.headers.X-A', '--signature']);
  expect(JSON.stringify(issues)).not.toContain('break-secret');
  expect(receiverFromFlags({ receiver: join(dir, 'none.json') })).toMatchObject({ ok: false, issues: [{ path: '--receiver' }] });
});

test('no flag: nothing, so the destination keeps its receiver settings', () => {
  expect(receiverFromFlags({})).toEqual({ ok: true, receiver: {} });
});

describe('herald destinations rotate-auth', () => {
  const env = { HERALD_URL: 'http://127.0.0.1:8080', HERALD_ADMIN_TOKEN: 't' };
  test('posts the file’s auth and the grace in seconds; prints no credential', async () => {
    const h = harness(() => Response.json({ id: 'orders', auth: { type: 'apiKey', header: 'X-Api-Key' }, previousAuth: { type: 'apiKey', expiresAt: '2026-12-02T00:00:00.000Z' } }));
    const receiver = file('rotate.json', JSON.stringify({ auth: { type: 'apiKey', header: 'X-Api-Key', value: 'rotated-key-value' } }));
    expect(await h.run(['destinations', 'rotate-auth', 'orders', '--receiver', receiver, '--grace', '2h'], { env })).toBe(0);
    expect(h.sent.map((s) => [s.method, s.url, JSON.parse(s.body!.toString())])).toEqual([
      ['POST', 'http://127.0.0.1:8080/admin/destinations/orders/rotate-auth', { auth: { type: 'apiKey', header: 'X-Api-Key', value: 'rotated-key-value' }, graceSeconds: 7200 }],
    ]);
    expect([...h.out, ...h.err].join('\n')).not.toContain('rotated-key-value');
    expect(h.err.join('\n')).toMatch(/until 2026-12-02T00:00:00.000Z/);
  });

  test('posts the file’s headers (a secret value) for rotation; prints no credential', async () => {
    const h = harness(() => Response.json({ id: 'orders', headers: { 'X-Partner-Key': { secret: true } }, previousHeaders: { expiresAt: '2026-12-02T00:00:00.000Z' } }));
    const receiver = file('rotate-headers.json', JSON.stringify({ headers: { 'X-Partner-Key': { secret: 'rotated-header-key' } } }));
    expect(await h.run(['destinations', 'rotate-auth', 'orders', '--receiver', receiver, '--grace', '30m'], { env })).toBe(0);
    expect(h.sent.map((s) => JSON.parse(s.body!.toString()))).toEqual([{ headers: { 'X-Partner-Key': { secret: 'rotated-header-key' } }, graceSeconds: 1800 }]);
    expect([...h.out, ...h.err].join('\n')).not.toContain('rotated-header-key');
    expect(h.err.join('\n')).toMatch(/new receiver headers in use; .*until 2026-12-02T00:00:00.000Z/);
  });

  test('a file without auth, headers or tls is a usage error; nothing is sent', async () => {
    const h = harness();
    expect(await h.run(['destinations', 'rotate-auth', 'orders', '--receiver', file('none.json', '{}')], { env })).toBe(2);
    expect(h.sent).toEqual([]);
  });
});
