import { DocumentData, Firestore, Timestamp } from '@google-cloud/firestore';
import { COLLECTIONS, FIRESTORE_TTL_FIELDS } from '../../shared/firestore-schema';
import { deliveryId } from '../../shared/domain/retry/delivery';
import { DAY_MS } from '../../shared/domain/delivery/delivery-retention';
import { eventKey } from '../../shared/domain/events/event';
import { eventually } from '../support/eventually';
import { Receiver } from '../support/receiver';
import { startTestStack, TestStack } from '../support/stack';

/**
 * HERALD_DELIVERY_RETENTION_DAYS reaches the records the running pipeline writes: the emulator
 * never applies TTL (EMULATORS.md), so what is checked is the field Firestore's policy deletes by.
 */
const PROJECT = `retention-test-${Date.now().toString(36)}`;
const RETENTION_DAYS = 9;
const db = new Firestore({ projectId: PROJECT, ignoreUndefinedProperties: true });
const receiver = new Receiver((req) => ({ status: req.path.startsWith('/failing') ? 503 : 204 }));
let stack: TestStack;

beforeAll(async () => {
  await receiver.start();
  stack = await startTestStack(PROJECT, { HERALD_DELIVERY_RETENTION_DAYS: String(RETENTION_DAYS) });
  for (const id of ['ok', 'failing']) {
    // 200 when a run that stopped early left it behind.
    expect([200, 201]).toContain((await stack.admin('PUT', `/destinations/${id}`, { url: `${receiver.url}/${id}`, eventTypes: [`com.example.${id}`] })).status);
  }
}, 60_000);

afterAll(async () => {
  await stack?.stop({ purge: true });
  await receiver.stop();
  await db.terminate();
});

const stored = (destination: string, id: string) =>
  eventually(`the ${destination} record of ${id}`, async () => {
    const snap = await db.collection(COLLECTIONS.deliveries).doc(deliveryId(destination, eventKey({ source: '/retention', id }))).get();
    return snap.exists ? (snap.data() as DocumentData) : undefined;
  });

test('a delivered record carries its expiry, the configured days after it settled; a retried one none', async () => {
  const before = Date.now();
  // Ids of this run: a record left by an earlier one would not be written again.
  const kept = `kept-${before}`;
  const retried = `retried-${before}`;
  for (const [id, type] of [[kept, 'com.example.ok'], [retried, 'com.example.failing']]) {
    const res = await stack.ingest({ 'ce-id': id!, 'ce-source': '/retention', 'ce-type': type!, 'ce-specversion': '1.0', 'content-type': 'application/json' }, '{}');
    expect(res.status).toBe(202);
  }
  await receiver.waitFor(1, '/ok');
  const delivered = await eventually('the record DELIVERED', async () => {
    const doc = await stored('ok', kept);
    return doc.status === 'DELIVERED' ? doc : undefined;
  });
  const expireAt = delivered[FIRESTORE_TTL_FIELDS.deliveries.field] as Timestamp;
  expect(expireAt).toBeInstanceOf(Timestamp);
  expect(expireAt.toMillis()).toBeGreaterThanOrEqual(before + RETENTION_DAYS * DAY_MS);
  expect(expireAt.toMillis()).toBeLessThanOrEqual(Date.now() + RETENTION_DAYS * DAY_MS);
  // A failed first attempt leaves the delivery PENDING for its retry: it must not vanish.
  const pending = await eventually('the failed delivery PENDING', async () => {
    const doc = await stored('failing', retried);
    return doc.status === 'PENDING' ? doc : undefined;
  });
  expect(pending).not.toHaveProperty(FIRESTORE_TTL_FIELDS.deliveries.field);
  // The API shows the record, not storage's field.
  const shown = await stack.admin('GET', `/deliveries/${delivered.id as string}`);
  expect(shown.status).toBe(200);
  expect(shown.body).not.toHaveProperty('expireAt');
}, 60_000);
