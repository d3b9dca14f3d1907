import { FirestoreIntakeStore } from '../../shared/adapters/firestore/intake';
import { COLLECTIONS } from '../../shared/firestore-schema';
import { UsageDay } from '../../shared/domain/usage/usage';
import { eventually } from '../support/eventually';
import { Receiver } from '../support/receiver';
import { startTestStack, TestStack } from '../support/stack';

/**
 * Issue 57, usage when a producer resends (docs/usage.md, "Exactness"), on the emulators with
 * two instances. Ingest publishes an event's lane messages beside its journal write, so a try
 * whose journal write never lands (a process killed under it, or Firestore failing) has its
 * events delivered — records carrying the id of a batch that never existed — and answered 503.
 * The producer's resend is journaled: the reconciler counts those events and their deliveries
 * with it, once, however many times they are sent again. And a resend of a try that was
 * journaled, and counted, and removed is not taken for one that never was.
 */
const PROJECT = `usage-unjournaled-${Date.now().toString(36)}`;
const ACCOUNT = 'resends';
const DESTINATIONS = ['one', 'two'];
const today = () => new Date().toISOString().slice(0, 10);
const BATCH = { 'content-type': 'application/cloudevents-batch+json' };
/** A resend says so (docs/http-api.md): a destination that has an event already is not sent it again. */
const RESEND = { ...BATCH, 'herald-resend': '1' };

let stack: TestStack;
const receiver = new Receiver();
const startDay = today();

beforeAll(async () => {
  await receiver.start();
  stack = await startTestStack(PROJECT, { HERALD_ACCOUNT_PUBLISH_QUOTA: '100000', HERALD_RECONCILE_AFTER_MS: '2000', HERALD_RECONCILE_INTERVAL_MS: '500' }, { instances: 2 });
  expect((await stack.admin('POST', '/accounts', { id: ACCOUNT, name: ACCOUNT })).status).toBe(201);
  for (const d of DESTINATIONS) expect((await stack.admin('PUT', `/accounts/${ACCOUNT}/destinations/${d}`, { url: `${receiver.url}/${d}`, eventTypes: ['com.example.resend.*'] })).status).toBe(201);
}, 60_000);

afterAll(async () => {
  jest.restoreAllMocks();
  await stack?.stop({ purge: true });
  await receiver.stop();
});

const events = (from: number, to: number) =>
  JSON.stringify(Array.from({ length: to - from }, (_, k) => ({ specversion: '1.0', id: `ev-${from + k}`, source: '/resend-test', type: 'com.example.resend.made', heraldaccount: ACCOUNT, data: { n: from + k } })));

async function usage(): Promise<{ eventsAccepted: number; deliveries: number }> {
  const res = await stack.admin('GET', `/accounts/${ACCOUNT}/usage?from=${startDay}&to=${today()}`);
  expect(res.status).toBe(200);
  const days = (res.body as { days: UsageDay[] }).days;
  return { eventsAccepted: days.reduce((n, d) => n + d.eventsAccepted, 0), deliveries: days.reduce((n, d) => n + d.deliveries, 0) };
}

/** Whether the journal is empty: every batch counted and removed. */
async function journalEmpty(): Promise<boolean> {
  return (await stack.runtimes[0]!.firestore.collection(COLLECTIONS.intake).limit(1).get()).empty;
}

/** Each event of `from`..`to` received at every destination (at least once). */
const receivedAll = (from: number, to: number) =>
  DESTINATIONS.every((d) => {
    const ids = new Set(receiver.requests.filter((r) => r.path === `/${d}`).map((r) => String(r.headers['ce-id'])));
    return Array.from({ length: to - from }, (_, k) => `ev-${from + k}`).every((id) => ids.has(id));
  });

test("a try whose journal write never landed (its lanes went out): its events and deliveries are counted once, with the producer's resend", async () => {
  // Every journal write fails without landing, as under a process killed mid-write.
  const add = jest.spyOn(FirestoreIntakeStore.prototype, 'add').mockRejectedValue(Object.assign(new Error('4 DEADLINE_EXCEEDED: test: the journal write never landed'), { code: 4 }));
  const first = await stack.ingest(BATCH, events(0, 10));
  expect(first.status).toBe(503);
  expect(first.body).toMatchObject({ accepted: [] });
  // Sent on all the same: the lane messages went out beside the journal write.
  await eventually('the unjournaled try delivered', async () => (receivedAll(0, 10) ? true : undefined), 60_000, 100);
  add.mockRestore();
  // The producer resends, twice (its second resend's answer lost, say): both journaled.
  expect((await stack.ingest(RESEND, events(0, 10))).status).toBe(202);
  expect((await stack.ingest(RESEND, events(0, 10))).status).toBe(202);
  await eventually('every batch reconciled', async () => ((await journalEmpty()) ? true : undefined), 60_000, 250);
  // Ten events, twenty deliveries: before, the resends took the records for another batch's and counted neither.
  expect(await usage()).toEqual({ eventsAccepted: 10, deliveries: 20 });
}, 120_000);

test('a resend of a try that was journaled, counted and removed counts nothing more', async () => {
  const before = await usage();
  expect((await stack.ingest(BATCH, events(10, 20))).status).toBe(202);
  await eventually('the try counted', async () => ((await journalEmpty()) && (await usage()).eventsAccepted === before.eventsAccepted + 10 ? true : undefined), 60_000, 250);
  expect((await stack.ingest(RESEND, events(10, 20))).status).toBe(202);
  await eventually('the resend reconciled', async () => ((await journalEmpty()) ? true : undefined), 60_000, 250);
  expect(await usage()).toEqual({ eventsAccepted: before.eventsAccepted + 10, deliveries: before.deliveries + 20 });
}, 120_000);
