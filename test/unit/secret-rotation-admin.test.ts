import { DestinationDirectory } from '../../shared/app/destinations/destination-directory';
import { postRotateSecret } from '../../shared/app/admin/secret-rotation-admin';
import { applySpec, generateSecret } from '../../shared/domain/destinations/destination';
import { createLogger } from '../../shared/log';
import { MemoryDestinationStore } from '../../shared/adapters/memory/destination-store';
import { webhookDestination } from '../support/destinations';

/** POST /admin/destinations/{id}/rotate-secret over the memory store. */

const NOW = new Date('2026-11-23T10:00:00.000Z');

async function setup() {
  const destinations = new MemoryDestinationStore();
  const lines: string[] = [];
  const clock = { now: () => NOW };
  const deps = { destinations, directory: new DestinationDirectory(destinations, clock, 10_000), clock, log: createLogger({ level: 'DEBUG', write: (l) => lines.push(l) }) };
  await destinations.put(webhookDestination('orders'));
  await destinations.put(applySpec('audit', { topic: 'projects/acme-audit/topics/events' }, undefined, NOW));
  return { deps, destinations, lines };
}

test('rotates in the store, answers the new secret once, logs without it', async () => {
  const { deps, destinations, lines } = await setup();
  const before = (await destinations.get('orders'))!.secret;
  const result = await postRotateSecret(deps, 'orders', { graceSeconds: 600 });
  expect(result.kind).toBe('ok');
  const body = (result as { body: { secret: string; previousSecrets: { expiresAt: string }[] } }).body;
  const stored = (await destinations.get('orders'))!;
  expect(stored.secret).toBe(body.secret);
  expect(stored.previousSecrets).toEqual([{ secret: before, expiresAt: '2026-11-23T10:10:00.000Z' }]);
  expect(body.previousSecrets).toEqual([{ expiresAt: '2026-11-23T10:10:00.000Z' }]);
  expect(JSON.stringify(body)).not.toContain(before);
  expect(lines.join('\n')).not.toMatch(/whsec_/);
  expect(JSON.parse(lines[0]!)).toMatchObject({ message: 'destination signing secret rotated', destinationId: 'orders', graceSeconds: 600 });
});

test('a secret of the caller’s is used as given; no body means Herald’s secret and 24 h', async () => {
  const { deps, destinations } = await setup();
  const mine = generateSecret();
  expect((await postRotateSecret(deps, 'orders', { secret: mine })).kind).toBe('ok');
  expect((await destinations.get('orders'))!.secret).toBe(mine);
  expect((await destinations.get('orders'))!.previousSecrets![0]!.expiresAt).toBe('2026-11-24T10:00:00.000Z');
  expect((await postRotateSecret(deps, 'orders', undefined)).kind).toBe('ok');
});

test.each<[string, string, unknown, string, RegExp]>([
  ['an unknown destination', 'nobody', {}, 'not-found', /no destination "nobody"/],
  ['a bad id', 'Bad_ID', {}, 'invalid', /invalid destination id/],
  ['a topic destination', 'audit', {}, 'conflict', /Pub\/Sub topic, whose messages are not signed/],
  ['a negative grace', 'orders', { graceSeconds: -5 }, 'invalid', /invalid rotate-secret request/],
])('%s → %s', async (_, id, body, kind, error) => {
  const { deps } = await setup();
  const result = await postRotateSecret(deps, id, body);
  expect(result.kind).toBe(kind);
  expect((result as { body: { error: string } }).body.error).toMatch(error);
});

test('the current secret is refused as the new one', async () => {
  const { deps, destinations } = await setup();
  const current = (await destinations.get('orders'))!.secret;
  const result = await postRotateSecret(deps, 'orders', { secret: current });
  expect(result).toMatchObject({ kind: 'invalid', body: { issues: [{ path: 'secret', message: expect.stringContaining('must differ') as string }] } });
});
