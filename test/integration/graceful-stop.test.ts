import { Firestore } from '@google-cloud/firestore';
import { FirestoreDeliveryStore } from '../../shared/adapters/firestore/deliveries/delivery-store';
import { deliveryId } from '../../shared/domain/retry/delivery';
import { eventKey } from '../../shared/domain/events/event';
import { eventually } from '../support/eventually';
import { Receiver } from '../support/receiver';
import { startTestStack, TestStack } from '../support/stack';

/**
 * Stopping local mode while an attempt is under way lets the attempt finish and be recorded,
 * instead of closing the clients under it (the receiver would have the event, Herald no
 * record of it, and the lane message would be attempted again).
 */
const PROJECT = `graceful-stop-test-${Date.now().toString(36)}`;
const ANSWER_AFTER_MS = 1500;
const receiver = new Receiver(() => ({ status: 204, delayMs: ANSWER_AFTER_MS }));
let stack: TestStack | undefined;
const db = new Firestore({ projectId: PROJECT, ignoreUndefinedProperties: true });

afterAll(async () => {
  await stack?.stop({ purge: true, drainMs: 0 });
  await receiver.stop();
  await db.terminate();
});

test('stop() waits for an attempt in progress, which is recorded DELIVERED; later requests get 503', async () => {
  await receiver.start();
  stack = await startTestStack(PROJECT);
  const running = stack;
  expect((await running.admin('PUT', '/destinations/slow-ok', { url: `${receiver.url}/slow-ok` })).status).toBe(201);
  const sent = await running.ingest({ 'ce-id': 'stop-1', 'ce-source': '/stop', 'ce-type': 'com.example.stop', 'ce-specversion': '1.0', 'content-type': 'application/json' }, '{}');
  expect(sent.status).toBe(202);
  await eventually('the attempt to reach the receiver', () => (receiver.requests.length >= 1 ? true : undefined));

  const stopping = running.stop({ purge: true });
  // Stopping: the server answers what comes now with 503 (a push is brought again later).
  const late = await fetch(`${running.url}/ingest`, { method: 'POST' }).then((r) => r.status, () => 'refused');
  expect([503, 'refused']).toContain(late);
  await stopping;
  stack = undefined;

  const record = await new FirestoreDeliveryStore(db).get(deliveryId('slow-ok', eventKey({ source: '/stop', id: 'stop-1' })));
  expect(record).toMatchObject({ status: 'DELIVERED', attempts: 1 });
  expect(running.logs.filter((l) => l.severity === 'ERROR')).toEqual([]);
  expect(receiver.requests).toHaveLength(1);
});
