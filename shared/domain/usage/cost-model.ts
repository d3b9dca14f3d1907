/**
 * The cost model: GCP list prices × what one event costs Herald, as the bench's cost phase
 * measured it. Pure (no I/O, no clock): every function maps numbers to US dollars, and every
 * per-event figure comes out in dollars per million events.
 */

export interface FirestorePrices {
  /** Where these prices apply (us-central1, nam5). */
  location: string;
  readsPer100k: number;
  writesPer100k: number;
  deletesPer100k: number;
  /** Stored data, per GiB-month (documents, their metadata and index entries). */
  storagePerGiBMonth: number;
}

export interface PriceList {
  /** Where each price was read, and when. */
  sources: readonly string[];
  checked: string;
  firestore: { regional: FirestorePrices; multiRegion: FirestorePrices };
  pubsub: {
    /** Message Delivery Basic: publish and delivery each count. */
    perTiB: number;
    /** Every publish, push or pull request is billed at least this many bytes. */
    minBytesPerRequest: number;
  };
  functions: {
    /** CPU allocated only while a request is handled ("request-based billing"). */
    requestBased: { perMillionRequests: number; perVcpuSecond: number; perGiBSecond: number };
    /** CPU allocated for the instance's whole life ("instance-based billing"): no request fee. */
    instanceBased: { perVcpuSecond: number; perGiBSecond: number };
  };
  /** Cloud Logging ingestion of Herald's own lines at the default level (INFO). */
  logging: { perGiB: number };
}

/** List prices, tier 1 regions, in US dollars, without free tiers or committed-use discounts. */
export const GCP_LIST_PRICES: PriceList = {
  sources: [
    'https://cloud.google.com/firestore/pricing (Standard edition; us-central1 and nam5 tables)',
    'https://firebase.google.com/docs/firestore/standard-edition (us-central1: $0.03 / $0.09 / $0.01 per 100,000)',
    'https://cloud.google.com/pubsub/pricing (message delivery basic; data volume of a message; 1000-byte minimum per request)',
    'https://cloud.google.com/run/pricing (tier 1; Cloud Run functions bill as Cloud Run)',
    'https://cloud.google.com/stackdriver/pricing (Cloud Logging storage)',
  ],
  checked: '2026-11-23',
  firestore: {
    // Storage: $0.18 per GiB-month is nam5's list price; us-central1's is not lower, so it is taken for both (an upper bound).
    regional: { location: 'us-central1', readsPer100k: 0.03, writesPer100k: 0.09, deletesPer100k: 0.01, storagePerGiBMonth: 0.18 },
    multiRegion: { location: 'nam5', readsPer100k: 0.06, writesPer100k: 0.18, deletesPer100k: 0.02, storagePerGiBMonth: 0.18 },
  },
  pubsub: { perTiB: 40, minBytesPerRequest: 1000 },
  functions: {
    requestBased: { perMillionRequests: 0.4, perVcpuSecond: 0.000024, perGiBSecond: 0.0000025 },
    instanceBased: { perVcpuSecond: 0.000018, perGiBSecond: 0.000002 },
  },
  logging: { perGiB: 0.5 },
};

export interface ModelAssumptions {
  /** vCPUs and memory of every function instance. */
  vcpus: number;
  memoryGiB: number;
  /**
   * Share of billed instance time the vCPUs are busy, with concurrency above 1 under steady
   * load: Cloud Run adds instances at about 60 % CPU, so billed vCPU time ≈ CPU time ÷ 0.6.
   */
  cpuUtilization: number;
  /** Pub/Sub bills, on top of data and attributes, 20 bytes of timestamp and the message id (16 digits on GCP). */
  messageOverheadBytes: number;
}

export const DEFAULT_ASSUMPTIONS: ModelAssumptions = { vcpus: 1, memoryGiB: 0.25, cpuUtilization: 0.6, messageOverheadBytes: 20 + 16 };

/** What one event costs Herald, in the units GCP bills. */
export interface PerEventUsage {
  firestore: { reads: number; writes: number; deletes: number };
  pubsub: {
    /** Messages published per event, and their data + attribute bytes in all. */
    publish: { messages: number; bytes: number };
    /** Messages pushed (or pulled) per event, and their data + attribute bytes in all. */
    delivery: { messages: number; bytes: number };
  };
  /** Function invocations per event (ingest, route, deliver). */
  invocations: number;
  /** CPU seconds the functions spent per event. */
  cpuSeconds: number;
  /**
   * Billed instance seconds per event if every request had an instance to itself
   * (concurrency 1): each request's duration rounded up to 100 ms. Absent: not measured.
   */
  soloBilledSeconds?: number;
  /** Log bytes Herald writes per event at the default level (INFO). */
  logBytes?: number;
  /** Firestore storage an event's record takes over its retention, GiB-months (storedGiBMonths()). */
  storedGiBMonths?: number;
}

/** GiB-months that `storedBytes` (a record with its index entries) hold Firestore storage for, kept `retentionDays`. */
export function storedGiBMonths(storedBytes: number, retentionDays: number): number {
  return (storedBytes / 2 ** 30) * (retentionDays / (365.25 / 12));
}

/**
 * `request`: request-based billing, instances kept busy at `cpuUtilization`.
 * `instance`: instance-based billing at the same utilization, no request fee.
 * `request-solo`: request-based billing with concurrency 1 (each request billed alone, ≥ 100 ms).
 */
export type Billing = 'request' | 'instance' | 'request-solo';
export type FirestoreLocation = 'regional' | 'multiRegion';

export const COMPONENTS = ['firestoreReads', 'firestoreWrites', 'firestoreDeletes', 'firestoreStorage', 'pubsubPublish', 'pubsubDelivery', 'invocations', 'cpu', 'memory', 'logging'] as const;
export type Component = (typeof COMPONENTS)[number];

export const COMPONENT_LABELS: Record<Component, string> = {
  firestoreReads: 'Firestore reads',
  firestoreWrites: 'Firestore writes',
  firestoreDeletes: 'Firestore deletes',
  firestoreStorage: 'Firestore storage (records, over their retention)',
  pubsubPublish: 'Pub/Sub publish',
  pubsubDelivery: 'Pub/Sub delivery',
  invocations: 'function invocations',
  cpu: 'function CPU',
  memory: 'function memory',
  logging: 'Cloud Logging',
};

/** Dollars per million events, by component, and their sum. */
export type CostBreakdown = Record<Component, number> & { total: number };

const MILLION = 1_000_000;
const TIB = 2 ** 40;

/** Data volume Pub/Sub counts for a message without its timestamp and id: data plus each attribute's key and value. */
export function messageBytes(data: Uint8Array, attributes: Record<string, string>): number {
  let bytes = data.byteLength;
  for (const [key, value] of Object.entries(attributes)) bytes += Buffer.byteLength(key) + Buffer.byteLength(value);
  return bytes;
}

/**
 * Billed bytes of `messages` messages holding `bytes` in all: each one carries the timestamp
 * and id overhead and is billed at least the per-request minimum (a push is one message per
 * request; counting the minimum per published message too is exact for messages over 1000 bytes).
 */
export function billableBytes(traffic: { messages: number; bytes: number }, minBytes: number, overheadBytes: number): number {
  if (traffic.messages <= 0) return 0;
  const each = traffic.bytes / traffic.messages + overheadBytes;
  return traffic.messages * Math.max(minBytes, each);
}

/** Billed instance seconds per event under a billing mode. */
export function billedInstanceSeconds(usage: PerEventUsage, billing: Billing, a: ModelAssumptions): number {
  if (billing === 'request-solo') {
    if (usage.soloBilledSeconds === undefined) throw new RangeError('request-solo billing needs soloBilledSeconds');
    return usage.soloBilledSeconds;
  }
  return usage.cpuSeconds / (a.vcpus * a.cpuUtilization);
}

/** Dollars per million events, by component. */
export function costPerMillion(usage: PerEventUsage, prices: PriceList, a: ModelAssumptions, variant: { firestore: FirestoreLocation; billing: Billing }): CostBreakdown {
  const fs = prices.firestore[variant.firestore];
  const per100k = (ops: number, price: number) => (ops * MILLION * price) / 100_000;
  const pubsub = (traffic: { messages: number; bytes: number }) =>
    ((billableBytes(traffic, prices.pubsub.minBytesPerRequest, a.messageOverheadBytes) * MILLION) / TIB) * prices.pubsub.perTiB;
  const rates = variant.billing === 'instance' ? { ...prices.functions.instanceBased, perMillionRequests: 0 } : prices.functions.requestBased;
  const instanceSeconds = billedInstanceSeconds(usage, variant.billing, a) * MILLION;
  const parts: Record<Component, number> = {
    firestoreReads: per100k(usage.firestore.reads, fs.readsPer100k),
    firestoreWrites: per100k(usage.firestore.writes, fs.writesPer100k),
    firestoreDeletes: per100k(usage.firestore.deletes, fs.deletesPer100k),
    firestoreStorage: (usage.storedGiBMonths ?? 0) * MILLION * fs.storagePerGiBMonth,
    pubsubPublish: pubsub(usage.pubsub.publish),
    pubsubDelivery: pubsub(usage.pubsub.delivery),
    invocations: usage.invocations * rates.perMillionRequests,
    cpu: instanceSeconds * a.vcpus * rates.perVcpuSecond,
    memory: instanceSeconds * a.memoryGiB * rates.perGiBSecond,
    logging: loggingPerMillion(usage.logBytes ?? 0, prices),
  };
  return { ...parts, total: COMPONENTS.reduce((sum, c) => sum + parts[c], 0) };
}

export const VARIANTS = [
  { key: 'regionalRequest', label: 'Firestore us-central1, request-based billing', firestore: 'regional', billing: 'request' },
  { key: 'regionalInstance', label: 'Firestore us-central1, instance-based billing', firestore: 'regional', billing: 'instance' },
  { key: 'multiRegionRequest', label: 'Firestore nam5, request-based billing', firestore: 'multiRegion', billing: 'request' },
  { key: 'multiRegionInstance', label: 'Firestore nam5, instance-based billing', firestore: 'multiRegion', billing: 'instance' },
  { key: 'regionalRequestSolo', label: 'Firestore us-central1, request-based, concurrency 1', firestore: 'regional', billing: 'request-solo' },
] as const satisfies readonly { key: string; label: string; firestore: FirestoreLocation; billing: Billing }[];
export type VariantKey = (typeof VARIANTS)[number]['key'];

/** Every variant the usage allows (concurrency 1 only when its billed seconds were measured). */
export function costVariants(usage: PerEventUsage, prices: PriceList, a: ModelAssumptions): Partial<Record<VariantKey, CostBreakdown>> {
  const out: Partial<Record<VariantKey, CostBreakdown>> = {};
  for (const v of VARIANTS) {
    if (v.billing === 'request-solo' && usage.soloBilledSeconds === undefined) continue;
    out[v.key] = costPerMillion(usage, prices, a, v);
  }
  return out;
}

/** Components from the most to the least expensive, with their share of the total. */
export function ranked(breakdown: CostBreakdown): { component: Component; dollars: number; share: number }[] {
  return COMPONENTS.map((component) => ({ component, dollars: breakdown[component], share: breakdown.total > 0 ? breakdown[component] / breakdown.total : 0 }))
    .filter((c) => c.dollars > 0)
    .sort((x, y) => y.dollars - x.dollars);
}

/** Dollars per million events for the log bytes Herald writes per event. */
export function loggingPerMillion(logBytesPerEvent: number, prices: PriceList): number {
  return ((logBytesPerEvent * MILLION) / 2 ** 30) * prices.logging.perGiB;
}

/** An idle reconciler round (docs/delivery-guarantees.md): its two queries find nothing, one read each. */
export const RECONCILER_READS_PER_RUN = 2;

/** What Herald costs with no events at all: the retry pump (and the reconciler), which Cloud Scheduler starts each minute. */
export interface FixedUsage {
  /** Firestore reads per month of the pump's polling with nothing due. */
  pollingReadsPerMonth: number;
  /** Seconds per month a pump request is running (billed under request-based billing). */
  pumpRequestSeconds: number;
  /** Seconds per month a pump instance exists (billed under instance-based billing). */
  pumpInstanceSeconds: number;
  pumpInvocations: number;
}

export interface FixedCost {
  polling: Record<FirestoreLocation, number>;
  pump: Record<'request' | 'instance', number>;
}

/** Dollars per month. */
export function fixedMonthly(f: FixedUsage, prices: PriceList, a: ModelAssumptions): FixedCost {
  const reads = (location: FirestoreLocation) => (f.pollingReadsPerMonth * prices.firestore[location].readsPer100k) / 100_000;
  const rb = prices.functions.requestBased;
  const ib = prices.functions.instanceBased;
  return {
    polling: { regional: reads('regional'), multiRegion: reads('multiRegion') },
    pump: {
      request: f.pumpRequestSeconds * (a.vcpus * rb.perVcpuSecond + a.memoryGiB * rb.perGiBSecond) + (f.pumpInvocations * rb.perMillionRequests) / MILLION,
      instance: f.pumpInstanceSeconds * (a.vcpus * ib.perVcpuSecond + a.memoryGiB * ib.perGiBSecond),
    },
  };
}

/**
 * The pump's usage per 30-day month on an idle Herald: Cloud Scheduler starts a run every
 * minute. By default (`hold` false) a run with nothing due before its end makes one round
 * and one look-ahead (the same queries) and returns; with `hold` it polls every
 * `intervalMs` for `runSeconds`.
 */
export function pumpFixedUsage(readsPerRound: number, runSeconds: number, intervalMs: number, hold = false): FixedUsage {
  const minutes = 30 * 24 * 60;
  const roundsPerRun = hold ? Math.max(1, Math.floor((runSeconds * 1000) / intervalMs)) : 2;
  return {
    // Each run starts with one reconciler round: two queries (intake batches due, owed dead letters).
    pollingReadsPerMonth: (readsPerRound * roundsPerRun + RECONCILER_READS_PER_RUN) * minutes,
    // Billed 100 ms at least.
    pumpRequestSeconds: (hold ? Math.max(runSeconds, 0.1) : 0.1) * minutes,
    // Runs start every minute, so the instance never idles long enough to go away.
    pumpInstanceSeconds: 60 * minutes,
    pumpInvocations: minutes,
  };
}
