import { MemoryDeliveryStore } from '../../shared/adapters/memory/delivery-store';
import { MemoryDestinationStore } from '../../shared/adapters/memory/destination-store';
import { MemoryIntakeStore } from '../../shared/adapters/memory/intake-store';
import { DestinationDirectory } from '../../shared/app/destinations/destination-directory';
import { PumpDeps } from '../../shared/app/retry/pump';
import { pumpRun } from '../../shared/app/retry/pump-run';
import { reconcileOnce } from '../../shared/app/intake/reconcile';
import { ReconcileDeps } from '../../shared/app/intake/reconcile-deps';
import { RUN_RECORDS } from '../../shared/app/intake/batch-recovery';
import { DeliveryRecord, deliveryId } from '../../shared/domain/retry/delivery';
import { applySpec, destinationSpecSchema } from '../../shared/domain/destinations/destination';
import { eventKey, HeraldEvent } from '../../shared/domain/events/event';
import { createLogger } from '../../shared/log';
import { systemClock } from '../../shared/ports/clock';
import { countedDeliveries, dueRetry } from '../support/recovery';
import { patient } from '../support/patience';

/**
 * The reconciler's rounds on memory stores (each create made slow, as a store round trip is): a
 * round is bounded by its record budget and by its time, the next goes on from the batch's kept
 * progress without reading anything twice, and a scheduled run's retry pump does not wait for it.
 */

const event = (id: string, type = 't'): HeraldEvent => ({ attributes: { specversion: '1.0', id, source: '/s', type }, data: Buffer.from('{}') });
const DESTINATIONS = 5;

async function world(createMs: number, budget: Pick<ReconcileDeps, 'roundMs' | 'roundRecords'>) {
  const destinations = new MemoryDestinationStore();
  const created = new Date(Date.now() - 60_000);
  for (let i = 0; i < DESTINATIONS; i++) await destinations.put(applySpec(`d${i}`, destinationSpecSchema.parse({ url: `https://hooks.example.com/d${i}`, eventTypes: ['t'] }), undefined, created));
  await destinations.put(applySpec('retry', destinationSpecSchema.parse({ url: 'https://hooks.example.com/retry', eventTypes: ['r'] }), undefined, created));
  const store = new MemoryDeliveryStore();
  const slow = new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'create') return async (record: DeliveryRecord, options?: { unlessGrouped?: boolean }) => (await new Promise((r) => setTimeout(r, createMs)), target.create(record, options));
      const value: unknown = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  const counted = countedDeliveries(slow);
  const intake = new MemoryIntakeStore();
  const acceptedAt = new Date(Date.now() - 30_000).toISOString();
  // 2,000 missing records: a batch of 300 events and one of 100, five destinations each.
  await intake.add({ id: 'i-1', acceptedAt, events: Array.from({ length: 300 }, (_, i) => event(`a${i}`)) });
  await intake.add({ id: 'i-2', acceptedAt, events: Array.from({ length: 100 }, (_, i) => event(`b${i}`)) });
  const log = createLogger({ write: () => undefined });
  const directory = new DestinationDirectory(destinations, systemClock, 0);
  const reconcile: ReconcileDeps = {
    intake,
    deliveries: counted.wrapped,
    directory,
    bus: { publish: async () => '1' },
    deadLetterTopic: 'herald-dead-letter',
    clock: systemClock,
    log,
    graceMs: 1_000,
    batchLimit: 100,
    rateLeases: { lease: () => Promise.reject(new Error('not used')), peek: async () => undefined },
    state: {},
    ...budget,
  };
  const published: string[] = [];
  const pump: PumpDeps = {
    bus: { publish: async (_topic, message) => String(published.push(message.attributes?.['ce-id'] ?? '')) },
    lanes: { ensureLane: async () => undefined, removeLane: async () => undefined },
    names: { prefix: 'herald' },
    directory,
    deliveries: store,
    deadLetterTopic: 'herald-dead-letter',
    clock: systemClock,
    log,
    claimTtlMs: 60_000,
    batchSize: 1,
  };
  return { reconcile, pump, intake, store, published, ...counted };
}

test('a round creates at most its record budget (and one run more); the next goes on from the kept progress, reading nothing twice', async () => {
  const w = await world(0, { roundRecords: 600 });
  const perRound: number[] = [];
  for (let round = 0; round < 10 && w.intake.batches.size > 0; round++) perRound.push((await reconcileOnce(w.reconcile)).recovered);
  expect(perRound.length).toBeGreaterThanOrEqual(3);
  for (const n of perRound) expect(n).toBeLessThanOrEqual(600 + RUN_RECORDS + DESTINATIONS);
  expect(perRound.reduce((a, b) => a + b, 0)).toBe(2_000);
  expect(w.creates.size).toBe(2_000);
  expect([...w.creates.values()].every((n) => n === 1)).toBe(true);
  // Resumed where it stopped: each expected record looked for once, over all the rounds.
  expect(w.examined.size).toBe(2_000);
  expect([...w.examined.values()].every((n) => n === 1)).toBe(true);
});

test('a round stops creating at its time budget and keeps its progress up to the first record it did not attempt', async () => {
  const w = await world(4, { roundMs: 150 });
  const began = Date.now();
  const report = await reconcileOnce(w.reconcile);
  // 32 creates of 4 ms at a time: well short of 2,000 in 150 ms, and over within a create of it.
  expect(Date.now() - began).toBeLessThan(150 + patient(100));
  expect(w.intake.batches.has('i-1')).toBe(true);
  expect(report.unfinished).toBeGreaterThanOrEqual(1);
  expect(report.recovered).toBeGreaterThan(0);
  expect(report.recovered).toBeLessThan(2_000);
  const progress = w.intake.batches.get('i-1')!.progress ?? 0;
  expect(progress).toBeGreaterThan(0);
  // Every event before the kept progress has all its records.
  const before = Array.from({ length: progress }, (_, i) => Array.from({ length: DESTINATIONS }, (_, d) => deliveryId(`d${d}`, eventKey(event(`a${i}`).attributes)))).flat();
  expect((await w.store.existing(before)).size).toBe(before.length);
  for (let round = 0; round < 50 && w.intake.batches.size > 0; round++) await reconcileOnce(w.reconcile);
  expect(w.intake.batches.size).toBe(0);
  expect(w.creates.size).toBe(2_000);
  expect([...w.creates.values()].every((n) => n === 1)).toBe(true);
});

test("a scheduled run's retry pump claims a due retry at once, beside a reconciler round that takes its whole budget", async () => {
  const w = await world(20, { roundMs: 400 });
  await w.store.put(dueRetry('retry', event('retry-1', 'r'), Date.now()));
  const began = Date.now();
  let firstRound = -1;
  const report = await pumpRun({ pump: w.pump, reconcile: w.reconcile, log: w.reconcile.log }, { runMs: 0, intervalMs: 20, hold: false, onRound: () => (firstRound = firstRound < 0 ? Date.now() - began : firstRound) });
  expect(report.reconciled?.recovered).toBeGreaterThan(0);
  expect(report.reconcileMs).toBeGreaterThanOrEqual(300);
  // The retry went out while the reconciler was still at work, not after it.
  expect(w.published).toContain('retry-1');
  expect(firstRound).toBeGreaterThanOrEqual(0);
  expect(firstRound).toBeLessThan(report.reconcileMs);
});
