import { DeliveryRecord, deliveryId } from '../../shared/domain/retry/delivery';
import { eventKey } from '../../shared/domain/events/event';
import { eventually } from '../support/eventually';
import { loseReplies, LostReplies } from '../support/lost-replies';
import { Receiver } from '../support/receiver';
import { startTestStack, TestStack } from '../support/stack';
import { SubscriptionTap } from '../support/subscription-tap';

/**
 * Issue 51, item 1 on the emulators: a delivery record's commit that lands and then loses its
 * reply (test/support/lost-replies.ts, scoped to this project and to one destination's records)
 * is the attempt's own write. The first attempt is counted once, listed once, dead-lettered,
 * the suspension decided; a claimed retry whose start and outcome lost their replies ends as it
 * would have. No duplicate is recorded that was never sent.
 */
const PROJECT = `lost-record-replies-${Date.now().toString(36)}`;
const SOURCE = '/lost-record-replies';
const SCALE = 300;

/** Per destination path: the statuses it answers each event, in order; the last one repeats. */
const script: Record<string, number[]> = { '/ok': [204], '/rejects': [400], '/gone': [410], '/flaky': [503, 204] };
const receiver: Receiver = new Receiver((req) => {
  const answers = script[req.path] ?? [204];
  const n = sentTo(req.path, String(req.headers['ce-id']));
  return { status: answers[Math.min(n, answers.length) - 1]! };
});
const sentTo = (path: string, id: string) => receiver.on(path).filter((r) => r.headers['ce-id'] === id).length;

let stack: TestStack;
let deadLetters: SubscriptionTap;

interface DestinationBody {
  status: 'active' | 'suspended';
  stats: { attempts1h: number; successRate1h?: number };
}

beforeAll(async () => {
  await receiver.start();
  stack = await startTestStack(PROJECT, { HERALD_TIME_SCALE: String(SCALE), HERALD_PUMP_INTERVAL_MS: '100' });
  deadLetters = new SubscriptionTap(PROJECT, `${stack.runtime.names.prefix}-dead-letter-hold`);
  for (const [id, policy] of [
    ['ok', 'event-platform'],
    ['rejects', 'adobe-best-effort'],
    ['gone', 'event-platform'],
    ['flaky', 'event-platform'],
  ] as const) {
    const res = await stack.admin('PUT', `/destinations/${id}`, { url: `${receiver.url}/${id}`, eventTypes: [`test.${id}`], policy });
    expect(res.status).toBe(201);
  }
});

afterAll(async () => {
  await deadLetters?.close();
  await stack?.stop({ purge: true });
  await receiver.stop();
});

/**
 * Loses the replies to the commits to `destination`'s delivery records numbered in `lost`
 * (1: the first such commit), for as long as `run` takes.
 */
async function losing<T>(destination: string, lost: number[], run: (fault: LostReplies) => Promise<T>): Promise<T> {
  let commits = 0;
  const fault = loseReplies({ rate: 0.5, projectId: PROJECT, paths: new RegExp(`/documents/deliveries/${destination}\\.`), random: () => (lost.includes(++commits) ? 0 : 0.9) });
  try {
    return await run(fault);
  } finally {
    fault.stop();
  }
}

async function publish(id: string, type: string): Promise<void> {
  const res = await stack.ingest({ 'ce-id': id, 'ce-source': SOURCE, 'ce-type': type, 'ce-specversion': '1.0', 'content-type': 'application/json' }, `{"n":"${id}"}`);
  expect(res.status).toBe(202);
}

const idOf = (destination: string, id: string) => deliveryId(destination, eventKey({ source: SOURCE, id }));

function settled(destination: string, id: string, status: DeliveryRecord['status']): Promise<DeliveryRecord> {
  return eventually(`${destination}/${id} to be ${status}`, async () => {
    const r = await stack.runtime.deliveries.get(idOf(destination, id));
    return r?.status === status ? r : undefined;
  });
}

async function destination(id: string): Promise<DestinationBody> {
  const res = await stack.admin('GET', `/destinations/${id}`);
  expect(res.status).toBe(200);
  return res.body as DestinationBody;
}

/** The destination's counted attempts once they reach `attempts` (counters are flushed in the background). */
function counted(id: string, attempts: number): Promise<DestinationBody['stats']> {
  return eventually(`${id} to count ${attempts} attempts`, async () => {
    const { stats } = await destination(id);
    return stats.attempts1h >= attempts ? stats : undefined;
  });
}

/** How often the delivery shows on its destination's log (first page). */
async function rowsOf(destination: string, id: string): Promise<number> {
  const res = await stack.admin('GET', `/destinations/${destination}/deliveries?limit=50`);
  expect(res.status).toBe(200);
  return (res.body as { deliveries: { id: string }[] }).deliveries.filter((d) => d.id === idOf(destination, id)).length;
}

const claimTakenOver = () => stack.logs.filter((l) => /claim was taken over/.test(String(l.message)));
const redeliveredLines = (id: string) => stack.logs.filter((l) => l.eventId === id && /redelivered lane message/.test(String(l.message)));

test('a DELIVERED first attempt whose create lost its reply: counted once, listed once, no duplicate', async () => {
  const record = await losing('ok', [1], async (fault) => {
    await publish('ok-1', 'test.ok');
    const r = await settled('ok', 'ok-1', 'DELIVERED');
    await eventually('the lost reply', () => (fault.lost === 1 ? true : undefined));
    return r;
  });
  expect(record.duplicates).toBeUndefined();
  expect(sentTo('/ok', 'ok-1')).toBe(1);
  expect(await counted('ok', 1)).toMatchObject({ attempts1h: 1, successRate1h: 1 });
  expect(await eventually('ok-1 in the log', async () => ((await rowsOf('ok', 'ok-1')) > 0 ? rowsOf('ok', 'ok-1') : undefined))).toBe(1);
  expect(redeliveredLines('ok-1')).toEqual([]);
});

test('a DEAD first attempt whose create lost its reply: counted, with its dead letter', async () => {
  await losing('rejects', [1], async (fault) => {
    await publish('rejects-1', 'test.rejects');
    await settled('rejects', 'rejects-1', 'DEAD');
    await eventually('the lost reply', () => (fault.lost === 1 ? true : undefined));
  });
  await deadLetters.find('the dead letter of rejects-1', (d) => d.attributes['ce-id'] === 'rejects-1');
  expect(await counted('rejects', 1)).toMatchObject({ attempts1h: 1, successRate1h: 0 });
  expect(redeliveredLines('rejects-1')).toEqual([]);
});

test('a 410 first attempt whose create lost its reply: the destination is suspended as decided', async () => {
  await losing('gone', [1], async (fault) => {
    await publish('gone-1', 'test.gone');
    await settled('gone', 'gone-1', 'QUEUED');
    await eventually('the lost reply', () => (fault.lost === 1 ? true : undefined));
  });
  await eventually('gone to be suspended', async () => ((await destination('gone')).status === 'suspended' ? true : undefined));
  expect(await counted('gone', 1)).toMatchObject({ attempts1h: 1 });
});

// Commits to a flaky record: its create (503: PENDING), the pump's claim, the retry's start, its outcome.
test("a claimed retry whose outcome lost its reply: not taken for another claim's, counted once", async () => {
  const record = await losing('flaky', [4], async (fault) => {
    await publish('flaky-1', 'test.flaky');
    const r = await settled('flaky', 'flaky-1', 'DELIVERED');
    await eventually('the lost reply', () => (fault.lost === 1 ? true : undefined));
    return r;
  });
  expect(record).toMatchObject({ attempts: 2 });
  expect(record.duplicates).toBeUndefined();
  expect(sentTo('/flaky', 'flaky-1')).toBe(2);
  expect(await counted('flaky', 2)).toMatchObject({ attempts1h: 2, successRate1h: 0.5 });
  expect(claimTakenOver()).toEqual([]);
});

test('a claimed retry whose start lost its reply: attempted under the claim it renewed, not skipped', async () => {
  const record = await losing('flaky', [3], async (fault) => {
    await publish('flaky-2', 'test.flaky');
    const r = await settled('flaky', 'flaky-2', 'DELIVERED');
    await eventually('the lost reply', () => (fault.lost === 1 ? true : undefined));
    return r;
  });
  expect(record).toMatchObject({ attempts: 2 });
  expect(sentTo('/flaky', 'flaky-2')).toBe(2);
  expect(stack.logs.filter((l) => l.eventId === 'flaky-2' && /claimed lane message skipped/.test(String(l.message)))).toEqual([]);
  expect(await counted('flaky', 4)).toMatchObject({ attempts1h: 4, successRate1h: 0.5 });
});
