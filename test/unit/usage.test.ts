import { MemoryCounterStore } from '../../shared/adapters/memory/counter-store';
import { DestinationCounters } from '../../shared/app/destinations/destination-counters';
import { getUsage } from '../../shared/app/usage/usage-admin';
import { usageCostUsd } from '../../shared/domain/usage/usage-cost';
import { emptyUsage, usageCsv, usageOutcome, usageRows } from '../../shared/domain/usage/usage';
import { createLogger } from '../../shared/log';

/** Usage metering (issue 57): counts folded into the counter flushes, exact across lost replies; the answer's rows. */

const quiet = createLogger({ write: () => undefined });
const T0 = Date.parse('2026-11-30T23:59:58Z');

function setup() {
  let now = T0;
  const clock = { now: () => new Date(now), advance: (ms: number) => void (now += ms) };
  const store = new MemoryCounterStore();
  const writer = new DestinationCounters(store, clock, quiet, { bucketMs: 60_000, flushMs: 1000, shard: 3 });
  return { clock, store, writer };
}

test('100 events a second for 10 s: usage adds one write a flush per account, and the counts are whole', async () => {
  const { clock, store, writer } = setup();
  for (let ms = 0; ms < 10_000; ms += 10) {
    writer.meter('acme', clock.now(), { eventsAccepted: 1, deliveries: 1, delivered: 1, attempts: { success: 1 }, bytesSent: 100 });
    await writer.flushIfDue();
    clock.advance(10);
  }
  await writer.flush();
  // Usage alone was counted: every write is the account's usage document(s), a flush a second at most.
  expect(store.writes.length).toBeLessThanOrEqual(11);
  expect(store.writes.length / 1000).toBeLessThanOrEqual(0.011);
  const days = (await store.usage('acme', '2026-11-30', '2026-12-01')).get('acme')!;
  // The run crossed midnight UTC: the counts fall on the day of their moment, none lost.
  expect(days.get('2026-11-30')!.eventsAccepted + days.get('2026-12-01')!.eventsAccepted).toBe(1000);
  expect(days.get('2026-11-30')!.eventsAccepted).toBe(200);
  expect(days.get('2026-12-01')).toMatchObject({ deliveries: 800, delivered: 800, attempts: { success: 800 }, bytesSent: 80_000 });
});

test('a commit whose reply was lost is not written again (its mark is read back); a write that failed is', async () => {
  const { clock, store, writer } = setup();
  writer.meter('acme', clock.now(), { eventsAccepted: 5 });
  store.loseReplies = 1;
  await writer.flush();
  clock.advance(1000);
  writer.meter('acme', clock.now(), { eventsAccepted: 1 });
  await writer.flush();
  expect((await store.usage('acme', '2026-11-30', '2026-11-30')).get('acme')!.get('2026-11-30')!.eventsAccepted).toBe(6);
  const failing = setup();
  const add = failing.store.add.bind(failing.store);
  let fail = true;
  failing.store.add = async (...args) => {
    if (fail) {
      fail = false;
      throw new Error('14 UNAVAILABLE');
    }
    return add(...args);
  };
  failing.writer.meter('acme', failing.clock.now(), { eventsRefused: 2 });
  await failing.writer.flush();
  failing.clock.advance(1000);
  await failing.writer.flush();
  expect((await failing.store.usage('acme', '2026-11-30', '2026-11-30')).get('acme')!.get('2026-11-30')!.eventsRefused).toBe(2);
});

test('the admin read counts this writer\'s unflushed usage too, and fills every day of the range', async () => {
  const { clock, writer } = setup();
  writer.meter('acme', clock.now(), { eventsAccepted: 3, attempts: { timeout: 1 } });
  const got = await getUsage({ counters: writer, clock }, 'acme', { from: '2026-11-29', to: '2026-11-30' });
  expect(got).toMatchObject({ kind: 'ok', body: { days: [{ date: '2026-11-29', eventsAccepted: 0, modeledCostUsd: 0 }, { date: '2026-11-30', eventsAccepted: 3, attempts: { timeout: 1 } }] } });
  expect(await getUsage({ counters: writer, clock }, 'acme', { from: '2026-11-30', to: '2026-11-01' })).toMatchObject({ kind: 'invalid', body: { issues: [{ path: 'to' }] } });
});

test('rows: months sum their days; CSV has every outcome a column; the modeled cost grows with what was used', () => {
  const day = (n: number) => ({ ...emptyUsage(), eventsAccepted: n, deliveries: 2 * n, delivered: 2 * n, attempts: { success: 2 * n, 'http-error': n }, bytesSent: 500 * n });
  const stored = new Map([
    ['2026-10-31', day(1)],
    ['2026-11-01', day(2)],
    ['2026-11-02', day(3)],
  ]);
  const months = usageRows(stored, '2026-10-30', '2026-11-02', 'month');
  expect(months.map((m) => [m.date, m.eventsAccepted, m.attempts])).toEqual([
    ['2026-10-30', 1, { success: 2, 'http-error': 1 }],
    ['2026-11-01', 5, { success: 10, 'http-error': 5 }],
  ]);
  expect(usageCsv(months).split('\n')[2]).toBe(`2026-11-01,5,0,0,10,10,5,0,0,0,10,2500,${months[1]!.modeledCostUsd}`);
  expect(usageCostUsd(day(1_000_000))).toBeGreaterThan(usageCostUsd(day(1000)));
  expect(usageCostUsd(emptyUsage())).toBe(0);
  // A million events, each delivered once with its retry half the time: dollars, not cents or thousands.
  expect(usageCostUsd(day(1_000_000))).toBeGreaterThan(0.5);
  expect(usageCostUsd(day(1_000_000))).toBeLessThan(20);
  expect([usageOutcome({ kind: 'response', status: 204 }), usageOutcome({ kind: 'response', status: 503 }), usageOutcome({ kind: 'published' }), usageOutcome({ kind: 'blocked' })]).toEqual(['success', 'http-error', 'success', 'refused']);
});
