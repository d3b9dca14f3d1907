import { Firestore } from '@google-cloud/firestore';
import { FirestoreCounterStore } from '../../shared/adapters/firestore/counters';
import { DestinationCounters } from '../../shared/app/destinations/destination-counters';
import { createLogger } from '../../shared/log';
import { systemClock } from '../../shared/ports/clock';
import { eventually } from '../support/eventually';
import { loseReplies } from '../support/lost-replies';
import { Receiver } from '../support/receiver';
import { startTestStack, TestStack } from '../support/stack';

/**
 * Issue 51 item 9, on the emulator with commits whose replies are lost after they landed
 * (test/support/lost-replies.ts, scoped to this file's project and to the documents named):
 * ingest's journal write, and the destination counters' flushes.
 */
const PROJECT = `lost-intake-${Date.now().toString(36)}`;
const INTAKE_DOCS = /\/documents\/intake\//;
const COUNTER_DOCS = /\/documents\/rates(-shared)?\//;

let stack: TestStack;
const receiver = new Receiver();
const db = new Firestore({ projectId: PROJECT, ignoreUndefinedProperties: true });

beforeAll(async () => {
  await receiver.start();
  stack = await startTestStack(PROJECT, { HERALD_RECONCILE_INTERVAL_MS: '600000' });
  for (const id of ['journaled', 'counted']) {
    const res = await stack.admin('PUT', `/destinations/${id}`, { url: `${receiver.url}/${id}`, eventTypes: [`com.example.${id}`] });
    expect(res.status).toBe(201);
  }
});

afterAll(async () => {
  await stack?.stop({ purge: true });
  await receiver.stop();
  await db.terminate();
});

const event = (id: string, type: string) => ({ 'ce-id': id, 'ce-source': '/shop', 'ce-type': type, 'ce-specversion': '1.0', 'content-type': 'application/json' });

/** A producer as the 503 tells it to behave: sends, and resends while the answer is 503. */
async function produce(id: string, type: string): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < 3; i++) {
    const res = await stack.ingest(event(id, type), '{}');
    statuses.push(res.status);
    if (res.status !== 503) break;
  }
  return statuses;
}

test('a journal write whose reply was lost had landed: ingest answers 202, and the event is sent once', async () => {
  let draws = 0;
  // The first journal commit's reply is lost; later ones come back.
  const fault = loseReplies({ rate: 0.5, projectId: PROJECT, paths: INTAKE_DOCS, random: () => (draws++ === 0 ? 0 : 0.9) });
  let statuses: number[];
  try {
    statuses = await produce('j-1', 'com.example.journaled');
  } finally {
    fault.stop();
  }
  expect(fault.lost).toBe(1);
  expect(statuses).toEqual([202]);
  await receiver.waitFor(1, '/journaled');
  // The batch is in the journal (the reconciler's backstop holds the event).
  const batches = await stack.runtime.intake.due(new Date(Date.now() + 60_000), 100);
  expect(batches.flatMap((b) => b.events.map((e) => e.attributes.id))).toContain('j-1');
  // Its delivery is recorded DELIVERED, and nothing else was sent for it.
  await eventually('j-1 recorded DELIVERED', async () => {
    const res = await stack.admin('GET', '/destinations/journaled/deliveries');
    const rows = (res.body as { deliveries: { eventId: string; status: string }[] }).deliveries;
    return rows.some((r) => r.eventId === 'j-1' && r.status === 'DELIVERED') ? true : undefined;
  });
  expect(receiver.on('/journaled').filter((r) => r.headers['ce-id'] === 'j-1')).toHaveLength(1);
});

test("counter flushes whose replies were lost are not added again: a destination's counts equal what its receiver answered", async () => {
  // Every third request fails: attempts and successes differ, failures are counted too.
  receiver.setResponder((req) => ({ status: req.path === '/counted' && Number(String(req.headers['ce-id']).slice(2)) % 3 === 0 ? 500 : 204 }));
  let seed = 7;
  const fault = loseReplies({ rate: 0.3, projectId: PROJECT, paths: COUNTER_DOCS, random: () => ((seed = (seed * 48271) % 2147483647) / 2147483647) });
  const N = 30;
  try {
    for (let i = 1; i <= N; i++) expect((await stack.ingest(event(`c-${i}`, 'com.example.counted'), '{}')).status).toBe(202);
    // Each event's first attempt (the failed ones' retries come later, after a backoff).
    await receiver.waitFor(N, '/counted');
    // Flushes under the fault until this process has written every count it holds.
    for (let i = 0; i < 10; i++) {
      await stack.runtime.counters.flush();
    }
  } finally {
    fault.stop();
  }
  expect(fault.lost).toBeGreaterThan(0);
  const reader = new FirestoreCounterStore(db);
  const ok = (r: { headers: Record<string, unknown> }) => Number(String(r.headers['ce-id']).slice(2)) % 3 !== 0;
  // The failed ones' retries go on meanwhile, each counted: flushed and compared until they agree.
  // A count added twice stays added: with it the two never agree again.
  let last: unknown;
  await eventually(
    "the stored counts to equal the receiver's",
    async () => {
      await stack.runtime.counters.flush();
      const answered = receiver.on('/counted');
      const stored = (await reader.window('counted', 0)).reduce((t, b) => ({ attempts: t.attempts + b.attempts, successes: t.successes + b.successes }), { attempts: 0, successes: 0 });
      const seen = { attempts: answered.length, successes: answered.filter(ok).length };
      last = { stored, seen };
      return stored.attempts === seen.attempts && stored.successes === seen.successes ? true : undefined;
    },
    30_000,
    500,
  ).catch((e: Error) => {
    throw new Error(`${e.message}: last ${JSON.stringify(last)}`);
  });
});

test('DestinationCounters on Firestore: half the flush replies lost, own and shared documents, every count exact', async () => {
  const store = new FirestoreCounterStore(db);
  const counters = new DestinationCounters(store, systemClock, createLogger({ write: () => undefined }), { bucketMs: 3_600_000, flushMs: 100, shard: 1 });
  let seed = 11;
  const fault = loseReplies({ rate: 0.5, projectId: PROJECT, paths: COUNTER_DOCS, random: () => ((seed = (seed * 48271) % 2147483647) / 2147483647) });
  const at = new Date();
  try {
    for (let round = 0; round < 8; round++) {
      // `busy` outgrows the shared document in the first round; `quiet-*` stay in one.
      for (let i = 0; i < 20; i++) counters.record('direct-busy', i % 5 === 0 ? 'failure' : 'success', at);
      counters.record('direct-quiet-a', 'success', at);
      counters.record('direct-quiet-b', 'failure', at);
      await counters.flush();
    }
  } finally {
    fault.stop();
  }
  expect(fault.lost).toBeGreaterThan(1);
  await counters.flush();
  const sum = async (id: string) => (await store.window(id, 0)).reduce((t, b) => ({ attempts: t.attempts + b.attempts, successes: t.successes + b.successes, failures: t.failures + b.failures }), { attempts: 0, successes: 0, failures: 0 });
  expect(await sum('direct-busy')).toEqual({ attempts: 160, successes: 128, failures: 32 });
  expect(await sum('direct-quiet-a')).toEqual({ attempts: 8, successes: 8, failures: 0 });
  expect(await sum('direct-quiet-b')).toEqual({ attempts: 8, successes: 0, failures: 8 });
});
