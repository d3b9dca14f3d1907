import { MemoryCounterStore } from '../../shared/adapters/memory/counter-store';
import { MemoryDeliveryStore } from '../../shared/adapters/memory/delivery-store';
import { MemoryDestinationStore } from '../../shared/adapters/memory/destination-store';
import { MemoryOrderedKeyStore } from '../../shared/adapters/memory/ordered-key-store';
import { MemoryRateLeaseStore } from '../../shared/adapters/memory/rate-lease-store';
import { getDelivery, listDeliveries } from '../../shared/app/admin/deliveries-admin';
import { getDestination, putDestination } from '../../shared/app/admin/destinations-admin';
import { listBlockedKeys, postSkipKey } from '../../shared/app/admin/ordered-keys-admin';
import { DestinationCounters } from '../../shared/app/destinations/destination-counters';
import { DestinationDirectory } from '../../shared/app/destinations/destination-directory';
import { admitOrdered, settleOrdered } from '../../shared/app/ordering/ordered-delivery';
import { PubSubMessage } from '../../shared/domain/events/cloudevents-pubsub';
import { DeliveryRecord } from '../../shared/domain/retry/delivery';
import { HeraldEvent } from '../../shared/domain/events/event';
import { createLogger } from '../../shared/log';

/** GET …/ordered-keys/blocked and POST …/ordered-keys/skip, and `ordering`/`order` in the views, over the memory stores. */

const NOW = new Date('2026-11-27T10:00:00.000Z');
const event = (id: string, key: string): HeraldEvent => ({ attributes: { specversion: '1.0', id, source: '/ledger', type: 'com.example.ledger.entry', partitionkey: key }, data: Buffer.from(id) }) as HeraldEvent;

async function setup() {
  const clock = { now: () => NOW };
  const log = createLogger({ write: () => undefined });
  const destinations = new MemoryDestinationStore();
  const deliveries = new MemoryDeliveryStore();
  const sent: PubSubMessage[] = [];
  const deps = {
    destinations,
    deliveries,
    orderedKeys: new MemoryOrderedKeyStore(deliveries),
    directory: new DestinationDirectory(destinations, clock, 0),
    counters: new DestinationCounters(new MemoryCounterStore(), clock, log, { bucketMs: 60_000, flushMs: 1_000, shard: 0 }),
    bus: { publish: async (_topic: string, m: PubSubMessage) => String(sent.push(m)) },
    lanes: { ensureLane: async () => undefined, removeLane: async () => undefined },
    names: { prefix: 'herald' },
    rateLeases: new MemoryRateLeaseStore(),
    clock,
    log,
    addressRules: { allowLoopback: false },
    resolver: { lookup: async () => [{ address: '93.184.215.14', family: 4 as const }] },
  };
  const put = async (id: string, spec: Record<string, unknown>) => (await putDestination(deps, id, { url: `https://hooks.example.com/${id}`, ...spec })).kind;
  expect(await put('acme_ledger', { ordering: { by: 'key', onFailure: 'block' } })).toBe('created');
  expect(await put('acme_plain', {})).toBe('created');
  const ledger = (await destinations.get('acme_ledger'))!;
  const ordered = { ...deps, keys: deps.orderedKeys };
  // Key z: z1 is the head and ends DEAD, which holds the key under block; z2 waits behind it.
  await admitOrdered(ordered, ledger, ['z1', 'z2'].map((id) => ({ event: event(id, 'z'), publishedAt: NOW.toISOString() })));
  await admitOrdered(ordered, ledger, [{ event: event('y1', 'y'), publishedAt: NOW.toISOString() }]);
  const z1 = deliveries.all().find((r) => r.eventId === 'z1')!;
  const dead = { ...z1, status: 'DEAD', attempts: 1 } as DeliveryRecord;
  await deliveries.put(dead);
  await settleOrdered(ordered, ledger, dead, 'block', false);
  const sentIds = () => sent.map((m) => m.attributes['ce-id']);
  return { deps, deliveries, sentIds, z1: dead };
}

test('ordering round-trips through PUT and GET; "key" is stored as {by: "key", onFailure: "skip"}', async () => {
  const { deps } = await setup();
  expect(await getDestination(deps, 'acme_ledger')).toMatchObject({ kind: 'ok', body: { ordering: { by: 'key', onFailure: 'block' } } });
  expect(await putDestination(deps, 'acme_plain', { url: 'https://hooks.example.com/plain', ordering: 'key' })).toMatchObject({ kind: 'ok', body: { ordering: { by: 'key', onFailure: 'skip' } } });
  const refused = await putDestination(deps, 'acme_plain', { url: 'https://hooks.example.com/plain', ordering: { by: 'key', onFailure: 'wait' } });
  expect(refused).toMatchObject({ kind: 'invalid', body: { issues: [{ path: 'ordering.onFailure', message: 'ordering.onFailure must be "skip" or "block"' }] } });
});

test('a held key is listed with the event that holds it; skipping it sends the next and lists it no more', async () => {
  const { deps, sentIds, z1 } = await setup();
  expect(sentIds()).toEqual(['z1', 'y1']);
  const held = { key: 'z', seq: 1, deliveryId: z1.id, eventId: 'z1', status: 'DEAD' };
  expect(await listBlockedKeys(deps, 'acme_ledger')).toEqual({ kind: 'ok', body: { keys: [{ ...held, why: 'block', since: NOW.toISOString() }] } });

  expect(await postSkipKey(deps, 'acme_ledger', { key: 'z' })).toEqual({ kind: 'ok', body: { skipped: held } });
  expect(sentIds()).toEqual(['z1', 'y1', 'z2']);
  expect(await listBlockedKeys(deps, 'acme_ledger')).toEqual({ kind: 'ok', body: { keys: [] } });
  // The skipped event stays DEAD, redeliverable on its own.
  expect((await deps.deliveries.get(z1.id))!.status).toBe('DEAD');

  const again = await postSkipKey(deps, 'acme_ledger', { key: 'z' });
  expect(again.kind).toBe('conflict');
  expect((again as { body: { error: string } }).body.error).toBe(
    'key "z" of destination "acme_ledger" is not held: nothing to skip (it may have been released already, by a skip or a redelivery); the held keys are listed by GET /admin/accounts/acme/destinations/ledger/ordered-keys/blocked',
  );
  expect((await postSkipKey(deps, 'acme_ledger', { key: 'y' })).kind).toBe('conflict');
});

test('a destination without ordering: no held keys, and a skip says how to turn ordering on', async () => {
  const { deps } = await setup();
  expect(await listBlockedKeys(deps, 'acme_plain')).toEqual({ kind: 'ok', body: { keys: [] } });
  const r = await postSkipKey(deps, 'acme_plain', { key: 'z' });
  expect(r.kind).toBe('conflict');
  expect((r as { body: { error: string } }).body.error).toMatch(/^destination "acme_plain" does not deliver in order \(its spec has no ordering\), so no key of it is held; .* PUT \/admin\/accounts\/acme\/destinations\/plain with "ordering": "key"$/);
});

test.each<[string, unknown, string]>([
  ['no body', undefined, 'the body must be a JSON object {"key": string}'],
  ['an array', ['z'], 'the body must be a JSON object {"key": string}'],
  ['no key', {}, 'key must be a string: the partition key (the events\' partitionkey) to move past its held event'],
  ['a number', { key: 7 }, 'key must be a string: the partition key (the events\' partitionkey) to move past its held event'],
  ['an empty key', { key: '' }, 'key must not be empty: name the partition key to move past its held event'],
  ['a key too long', { key: 'k'.repeat(257) }, 'key is at most 256 characters, as partition keys are'],
  ['another field', { key: 'z', force: true }, 'unknown field force: a skip request is {"key": string}'],
])('skip with %s → 400, the problem named', async (_name, body, message) => {
  const { deps, sentIds } = await setup();
  const r = await postSkipKey(deps, 'acme_ledger', body);
  expect(r).toMatchObject({ kind: 'invalid', body: { error: 'invalid skip request' } });
  expect((r as { body: { issues: { message: string }[] } }).body.issues.map((i) => i.message)).toEqual([message]);
  expect(sentIds()).toEqual(['z1', 'y1']);
});

test('an unknown destination is 404, a bad id 400, on both routes', async () => {
  const { deps } = await setup();
  expect(await listBlockedKeys(deps, 'acme_nobody')).toMatchObject({ kind: 'not-found', body: { error: 'no destination "acme_nobody"; list them with GET /admin/destinations' } });
  expect((await postSkipKey(deps, 'acme_nobody', { key: 'z' })).kind).toBe('not-found');
  expect((await listBlockedKeys(deps, 'Bad_ID')).kind).toBe('invalid');
  expect((await postSkipKey(deps, 'Bad_ID', { key: 'z' })).kind).toBe('invalid');
  // 256 characters is a key, and the answer is about the key, not the body.
  expect((await postSkipKey(deps, 'acme_ledger', { key: 'k'.repeat(256) })).kind).toBe('conflict');
});

test('the delivery views show each ordered delivery\'s place: by id and in the log', async () => {
  const { deps, z1 } = await setup();
  expect(await getDelivery(deps, z1.id, 'acme')).toMatchObject({ kind: 'ok', body: { id: z1.id, order: { key: 'z', seq: 1 } } });
  const log = await listDeliveries(deps, 'acme_ledger', {});
  const places = (log as { body: { deliveries: { eventId: string; order?: unknown }[] } }).body.deliveries.map((d) => [d.eventId, d.order]).sort();
  expect(places).toEqual([
    ['y1', { key: 'y', seq: 1 }],
    ['z1', { key: 'z', seq: 1 }],
    ['z2', { key: 'z', seq: 2 }],
  ]);
});
