import { deliveryId } from '../../shared/domain/retry/delivery';
import { eventKey, HeraldEvent } from '../../shared/domain/events/event';
import { IntakeBatch } from '../../shared/domain/intake/intake';
import { pumpRun, PumpRunReport } from '../../shared/app/retry/pump-run';
import { ReconcileDeps } from '../../shared/app/intake/reconcile-deps';
import { RUN_RECORDS } from '../../shared/app/intake/batch-recovery';
import { pumpDeps } from '../../shared/runtime/runtime';
import { reconcileDeps } from '../../shared/runtime/intake-deps';
import { patient } from '../support/patience';
import { Receiver } from '../support/receiver';
import { countedDeliveries, dueRetry } from '../support/recovery';
import { startTestStack, TestStack } from '../support/stack';

/**
 * A large recovery on the emulators: intake batches whose delivery records were never created
 * (3,300 missing across 21 batches, one of them 900 records long) are recovered over several
 * scheduled pump runs, each round bounded by its budget, every record created exactly once, a
 * round that dies part-way going on from the batch's kept progress — and a retry that falls due
 * before each run delivered by that run's retry pump, not after the recovery.
 */
const ROUND_RECORDS = 500;
const RECOVERY_TYPE = 'com.example.recovery';
const RETRY_TYPE = 'com.example.retry';

const receiver = new Receiver(() => ({ status: 200 }));
let stack: TestStack;

beforeAll(async () => {
  await receiver.start();
  stack = await startTestStack(`recovery-${Date.now().toString(36)}`, {
    // The scheduled run is called by the test: local mode's own loops stay out of the way.
    HERALD_PUMP_INTERVAL_MS: '60000',
    HERALD_RECONCILE_INTERVAL_MS: '600000',
    HERALD_RECONCILE_AFTER_MS: '1000',
  });
});

afterAll(async () => {
  await stack?.stop({ purge: true });
  await receiver.stop();
});

const event = (type: string, id: string): HeraldEvent => ({ attributes: { specversion: '1.0', id, source: '/recovery', type }, data: Buffer.from(`{"n":"${id}"}`) });

test('a recovery of 3,300 records: bounded rounds, resumable, each record created once, retries delivered every run', async () => {
  const rt = stack.runtime;
  const recoveryIds: string[] = [];
  for (const name of ['r1', 'r2', 'r3']) {
    const put = await stack.admin('PUT', `/destinations/${name}`, { url: `${receiver.url}/recovered`, eventTypes: [RECOVERY_TYPE] });
    expect(put.status).toBe(201);
    recoveryIds.push((put.body as { id: string }).id);
  }
  const retryPut = await stack.admin('PUT', '/destinations/retry', { url: `${receiver.url}/retry`, eventTypes: [RETRY_TYPE] });
  expect(retryPut.status).toBe(201);
  const retryDestination = (retryPut.body as { id: string }).id;

  // Accepted after the destinations were created, and never routed: every record is missing.
  await new Promise((r) => setTimeout(r, 20));
  const first = Date.now();
  const at = (ms: number) => new Date(first + ms).toISOString();
  // The big batch first (the oldest): the first round works its first run, the second dies in its second.
  const batches: IntakeBatch[] = [{ id: `i-${first}-big`, acceptedAt: at(0), events: Array.from({ length: 300 }, (_, e) => event(RECOVERY_TYPE, `big-e${e}`)) }];
  for (let b = 0; b < 20; b++) batches.push({ id: `i-${first}-${String(b).padStart(2, '0')}`, acceptedAt: at(10 + b), events: Array.from({ length: 40 }, (_, e) => event(RECOVERY_TYPE, `b${b}-e${e}`)) });
  for (const b of batches) await rt.intake.add(b);
  const expected = batches.flatMap((b) => b.events.flatMap((e) => recoveryIds.map((d) => deliveryId(d, eventKey(e.attributes)))));
  expect(expected).toHaveLength(3300);
  await new Promise((r) => setTimeout(r, 1100));

  // The second run dies part-way: one create in the big batch's second run throws.
  const bigSecondRun = batches[0]!.events[100]!;
  const kill = new Set<string>();
  const { wrapped, creates, examined } = countedDeliveries(rt.deliveries, kill);
  // Rounds bounded by their records alone: the time bound (10 s) cut them short on a busy
  // machine, and the killed create then fell in another run than the second.
  const reconcile: ReconcileDeps = { ...reconcileDeps(rt), deliveries: wrapped, roundRecords: ROUND_RECORDS, roundMs: 3_600_000 };
  // Local mode's own retry pump goes round each minute (HERALD_PUMP_INTERVAL_MS at its most),
  // and on a busy machine this test outlasts a minute: that round would claim a run's retry
  // first (report.sent 0). It finds nothing due; the runs' pump asks the store itself.
  const due = rt.deliveries.due.bind(rt.deliveries);
  jest.spyOn(rt.deliveries, 'due').mockResolvedValue([]);
  const runsPump = { ...pumpDeps(rt), deliveries: new Proxy(rt.deliveries, { get: (target, prop) => (prop === 'due' ? due : (Reflect.get(target, prop) as unknown)) }) };

  const runs: { report: PumpRunReport; firstPumpRoundMs: number; ms: number }[] = [];
  for (let run = 0; run < 20; run++) {
    if (run === 1) kill.add(deliveryId(recoveryIds[0]!, eventKey(bigSecondRun.attributes)));
    // A retry that fell due before the run.
    await rt.deliveries.put(dueRetry(retryDestination, event(RETRY_TYPE, `retry-${run}`), Date.now()));
    const started = Date.now();
    let firstPumpRoundMs = -1;
    const report = await pumpRun(
      { pump: runsPump, reconcile, log: rt.log },
      { runMs: 0, intervalMs: 100, hold: false, onRound: () => (firstPumpRoundMs = firstPumpRoundMs < 0 ? Date.now() - started : firstPumpRoundMs) },
    );
    runs.push({ report, firstPumpRoundMs, ms: Date.now() - started });
    // This run's retry pump sent the retry (the oldest due) in its one round, whatever the reconciler was doing.
    expect(report.sent).toBeGreaterThanOrEqual(1);
    await receiver.waitFor(run + 1, '/retry', patient(15_000));
    if (run === 1) expect(report.reconciled).toBeUndefined();
    else expect(report.reconciled).toBeDefined();
    if ((await rt.intake.due(new Date(Date.now() + 3_600_000), 100)).length === 0) break;
  }

  // Several rounds, each bounded: at most one run of creates past the round's budget.
  const recoveredPerRound = runs.map((r) => r.report.reconciled?.recovered ?? 0);
  expect(runs.length).toBeGreaterThanOrEqual(6);
  for (const n of recoveredPerRound) expect(n).toBeLessThanOrEqual(ROUND_RECORDS + RUN_RECORDS);
  // Every expected record created, each exactly once, killed round or not; the journal is empty.
  expect([...creates.values()].every((n) => n === 1)).toBe(true);
  expect(new Set(creates.keys())).toEqual(new Set(expected));
  expect((await rt.deliveries.existing(expected)).size).toBe(expected.length);
  expect(await rt.intake.due(new Date(Date.now() + 3_600_000), 100)).toEqual([]);
  // Resumed from the kept progress: only what the killed round had under way was looked at twice.
  const lookedTwice = [...examined.values()].filter((n) => n > 1).length;
  expect(lookedTwice).toBeLessThanOrEqual(4 * (RUN_RECORDS + 3));
  expect(examined.size).toBe(expected.length);
  // Each retry went out in its run's first pump round, not behind the recovery.
  for (const r of runs) expect(r.firstPumpRoundMs).toBeGreaterThanOrEqual(0);
}, patient(180_000));
