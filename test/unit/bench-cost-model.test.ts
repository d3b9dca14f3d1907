import { firestoreStoredBytes } from '../bench/stored-bytes';
import {
  billableBytes,
  costPerMillion,
  costVariants,
  DEFAULT_ASSUMPTIONS,
  fixedMonthly,
  GCP_LIST_PRICES,
  loggingPerMillion,
  messageBytes,
  ModelAssumptions,
  PerEventUsage,
  PriceList,
  pumpFixedUsage,
  ranked,
  storedGiBMonths,
} from '../../shared/domain/usage/cost-model';

const TIB = 2 ** 40;

/** Round prices make the arithmetic checkable by hand. */
const PRICES: PriceList = {
  ...GCP_LIST_PRICES,
  firestore: {
    regional: { location: 'r', readsPer100k: 0.03, writesPer100k: 0.09, deletesPer100k: 0.01, storagePerGiBMonth: 0.18 },
    multiRegion: { location: 'm', readsPer100k: 0.06, writesPer100k: 0.18, deletesPer100k: 0.02, storagePerGiBMonth: 0.18 },
  },
  pubsub: { perTiB: 40, minBytesPerRequest: 1000 },
  functions: {
    requestBased: { perMillionRequests: 0.4, perVcpuSecond: 0.000024, perGiBSecond: 0.0000025 },
    instanceBased: { perVcpuSecond: 0.000018, perGiBSecond: 0.000002 },
  },
  logging: { perGiB: 0.5 },
};
const A: ModelAssumptions = { vcpus: 1, memoryGiB: 0.25, cpuUtilization: 0.5, messageOverheadBytes: 36 };

/** A first-attempt success: 1 read, 1 write, two 1,464-byte messages each way, 3 invocations, 1 ms CPU. */
const FIRST: PerEventUsage = {
  firestore: { reads: 1, writes: 1, deletes: 0 },
  pubsub: { publish: { messages: 2, bytes: 2 * 1464 }, delivery: { messages: 2, bytes: 2 * 1464 } },
  invocations: 3,
  cpuSeconds: 0.001,
  soloBilledSeconds: 0.3,
};

describe('bench cost model', () => {
  it('prices Firestore operations per 100,000, regional and multi-region', () => {
    const regional = costPerMillion(FIRST, PRICES, A, { firestore: 'regional', billing: 'request' });
    expect(regional.firestoreReads).toBeCloseTo(0.3, 10);
    expect(regional.firestoreWrites).toBeCloseTo(0.9, 10);
    expect(regional.firestoreDeletes).toBe(0);
    const multi = costPerMillion({ ...FIRST, firestore: { reads: 1, writes: 1, deletes: 2 } }, PRICES, A, { firestore: 'multiRegion', billing: 'request' });
    expect(multi.firestoreReads).toBeCloseTo(0.6, 10);
    expect(multi.firestoreWrites).toBeCloseTo(1.8, 10);
    expect(multi.firestoreDeletes).toBeCloseTo(0.4, 10);
  });

  it('bills records stored over their retention, with their index entries', () => {
    // Kept a month (30.44 days).
    expect(storedGiBMonths(2048, 365.25 / 12)).toBeCloseTo(2048 / 2 ** 30, 15);
    const kept = costPerMillion({ ...FIRST, storedGiBMonths: storedGiBMonths(2048, 365.25 / 12) }, PRICES, A, { firestore: 'regional', billing: 'request' });
    expect(kept.firestoreStorage).toBeCloseTo(((2048 * 1e6) / 2 ** 30) * 0.18, 10);
    expect(costPerMillion(FIRST, PRICES, A, { firestore: 'regional', billing: 'request' }).firestoreStorage).toBe(0);
  });

  it('bills Pub/Sub bytes with the per-message overhead and the 1000-byte minimum', () => {
    // 1,464 + 36 = 1,500 bytes a message.
    expect(billableBytes({ messages: 2, bytes: 2928 }, 1000, 36)).toBe(3000);
    // 100 + 36 is under the minimum: 1000 each.
    expect(billableBytes({ messages: 3, bytes: 300 }, 1000, 36)).toBe(3000);
    expect(billableBytes({ messages: 0, bytes: 0 }, 1000, 36)).toBe(0);
    const c = costPerMillion(FIRST, PRICES, A, { firestore: 'regional', billing: 'request' });
    const expected = ((3000 * 1e6) / TIB) * 40;
    expect(c.pubsubPublish).toBeCloseTo(expected, 10);
    expect(c.pubsubDelivery).toBeCloseTo(expected, 10);
  });

  it('counts message bytes as data plus attribute keys and values, in UTF-8', () => {
    expect(messageBytes(Buffer.alloc(1024), { 'ce-id': 'abc', é: 'ü' })).toBe(1024 + 5 + 3 + 2 + 2);
  });

  it('bills compute from CPU time at the assumed utilization, with a request fee only under request-based billing', () => {
    const request = costPerMillion(FIRST, PRICES, A, { firestore: 'regional', billing: 'request' });
    // 1 ms CPU at 50 % utilization: 2 ms of a 1 vCPU, 0.25 GiB instance per event.
    expect(request.invocations).toBeCloseTo(1.2, 10);
    expect(request.cpu).toBeCloseTo(2000 * 0.000024, 10);
    expect(request.memory).toBeCloseTo(2000 * 0.25 * 0.0000025, 10);
    const instance = costPerMillion(FIRST, PRICES, A, { firestore: 'regional', billing: 'instance' });
    expect(instance.invocations).toBe(0);
    expect(instance.cpu).toBeCloseTo(2000 * 0.000018, 10);
    expect(instance.memory).toBeCloseTo(2000 * 0.25 * 0.000002, 10);
    expect(instance.total).toBeLessThan(request.total);
  });

  it('bills each request alone at concurrency 1', () => {
    const solo = costPerMillion(FIRST, PRICES, A, { firestore: 'regional', billing: 'request-solo' });
    expect(solo.cpu).toBeCloseTo(300_000 * 0.000024, 10);
    expect(solo.memory).toBeCloseTo(300_000 * 0.25 * 0.0000025, 10);
    const { soloBilledSeconds: _, ...unmeasured } = FIRST;
    expect(() => costPerMillion(unmeasured, PRICES, A, { firestore: 'regional', billing: 'request-solo' })).toThrow(RangeError);
    expect(costVariants(unmeasured, PRICES, A).regionalRequestSolo).toBeUndefined();
  });

  it('adds the components up and ranks them', () => {
    const c = costPerMillion(FIRST, PRICES, A, { firestore: 'regional', billing: 'request' });
    const sum = c.firestoreReads + c.firestoreWrites + c.firestoreDeletes + c.firestoreStorage + c.pubsubPublish + c.pubsubDelivery + c.invocations + c.cpu + c.memory;
    expect(c.total).toBeCloseTo(sum, 12);
    const order = ranked(c).map((r) => r.component);
    expect(order.slice(0, 2)).toEqual(['invocations', 'firestoreWrites']);
    expect(order).not.toContain('firestoreDeletes');
    expect(ranked(c).reduce((s, r) => s + r.share, 0)).toBeCloseTo(1, 10);
  });

  it('offers every pricing variant', () => {
    const v = costVariants(FIRST, PRICES, A);
    expect(Object.keys(v).sort()).toEqual(['multiRegionInstance', 'multiRegionRequest', 'regionalInstance', 'regionalRequest', 'regionalRequestSolo']);
    expect(v.multiRegionRequest!.total - v.regionalRequest!.total).toBeCloseTo(0.3 + 0.9, 10);
  });

  it('prices the retry pump as a fixed monthly cost', () => {
    const usage = pumpFixedUsage(2, 55, 1000, true);
    const minutes = 30 * 24 * 60;
    // The pump's rounds, and the reconciler's two queries at the start of each run.
    expect(usage.pollingReadsPerMonth).toBe((2 * 55 + 2) * minutes);
    expect(usage.pumpRequestSeconds).toBe(55 * minutes);
    expect(usage.pumpInstanceSeconds).toBe(60 * minutes);
    const monthly = fixedMonthly(usage, PRICES, A);
    expect(monthly.polling.regional).toBeCloseTo(((2 * 55 + 2) * minutes * 0.03) / 100_000, 10);
    expect(monthly.pump.request).toBeCloseTo(55 * minutes * (0.000024 + 0.25 * 0.0000025) + minutes * 0.4e-6, 8);
    expect(monthly.pump.instance).toBeCloseTo(60 * minutes * (0.000018 + 0.25 * 0.000002), 8);
    // One round a run still bills 100 ms.
    expect(pumpFixedUsage(2, 0, 1000, true).pumpRequestSeconds).toBeCloseTo(0.1 * minutes, 8);
    // Without hold an idle run is a round and a look-ahead, billed 100 ms.
    const idle = pumpFixedUsage(2, 55, 1000);
    expect(idle.pollingReadsPerMonth).toBe((2 * 2 + 2) * minutes);
    expect(idle.pumpRequestSeconds).toBeCloseTo(0.1 * minutes, 8);
    expect(fixedMonthly(idle, PRICES, A).pump.request).toBeCloseTo(0.1 * minutes * (0.000024 + 0.25 * 0.0000025) + minutes * 0.4e-6, 8);
  });

  it('prices log bytes per GiB, and counts them in the total', () => {
    expect(loggingPerMillion(2 ** 30 / 1e6, PRICES)).toBeCloseTo(0.5, 10);
    const quiet = costPerMillion(FIRST, PRICES, A, { firestore: 'regional', billing: 'request' });
    const logged = costPerMillion({ ...FIRST, logBytes: 2 ** 30 / 1e6 }, PRICES, A, { firestore: 'regional', billing: 'request' });
    expect(quiet.logging).toBe(0);
    expect(logged.logging).toBeCloseTo(0.5, 10);
    expect(logged.total - quiet.total).toBeCloseTo(0.5, 10);
  });

  it('ships list prices and assumptions that match the README', () => {
    expect(GCP_LIST_PRICES.firestore.regional).toMatchObject({ readsPer100k: 0.03, writesPer100k: 0.09, deletesPer100k: 0.01 });
    expect(GCP_LIST_PRICES.firestore.multiRegion).toMatchObject({ readsPer100k: 0.06, writesPer100k: 0.18, deletesPer100k: 0.02 });
    expect(GCP_LIST_PRICES.pubsub).toEqual({ perTiB: 40, minBytesPerRequest: 1000 });
    expect(DEFAULT_ASSUMPTIONS).toEqual({ vcpus: 1, memoryGiB: 0.25, cpuUtilization: 0.6, messageOverheadBytes: 36 });
  });
});

describe('firestoreStoredBytes (Firestore storage size rules)', () => {
  test('counts the document and an index entry per indexed value: two for a scalar, one per array element, none for an exempt field (a map, an ever-increasing time)', () => {
    const name = 'delivery-groups'.length + 1 + 'g1'.length + 1 + 16;
    // An entry: the document's name, its parent's (a top-level collection's: the database, 16 bytes), the field's name, the value, 32 bytes.
    const entry = (field: string, valueBytes: number) => name + 16 + field.length + 1 + valueBytes + 32;
    expect(firestoreStoredBytes('delivery-groups', 'g1', { oldest: 'x', destinations: 'acme' })).toBe(name + 32 + 'oldest'.length + 1 + 2 + 'destinations'.length + 1 + 5 + 2 * entry('destinations', 5));
    expect(firestoreStoredBytes('delivery-groups', 'g1', { ids: ['a', 'bb'] })).toBe(name + 32 + 4 + (2 + 3) + entry('ids', 2) + entry('ids', 3));
    expect(firestoreStoredBytes('delivery-groups', 'g1', { members: [{ id: 'a' }] })).toBe(name + 32 + 'members'.length + 1 + 'id'.length + 1 + 2);
    // A boolean is 1 byte (firestore storage-size: field value sizes).
    expect(firestoreStoredBytes('deliveries', 'd1', { rateDeferred: true })).toBe('deliveries'.length + 1 + 3 + 16 + 32 + 'rateDeferred'.length + 1 + 1 + 2 * ('deliveries'.length + 1 + 3 + 16 + 16 + 'rateDeferred'.length + 1 + 1 + 32));
  });
});
