/**
 * What the cost phase's Herald process counts, and the messages it exchanges with the bench
 * (cost-stack.ts is the child, cost.ts the parent). Every counter is cumulative since the
 * child started: the parent subtracts two snapshots.
 */
import { DeliveryStatus } from '../../shared/domain/retry/delivery';
import { FunctionName } from '../../shared/topology';
import { CounterWrite } from './counter-writes';
import { OpsByCollection } from './firestore-meter';

export interface FunctionCount {
  requests: number;
  /** Answers other than 2xx. */
  errors: number;
  /** Wall time inside the function, ms. */
  wallMs: number;
  /** Each request's wall time rounded up to 100 ms (what it bills with an instance to itself). */
  soloBilledMs: number;
}

export interface TopicCount {
  messages: number;
  /** Data plus attribute keys and values. */
  bytes: number;
  dataBytes: number;
}

export const TOPIC_KINDS = ['events', 'lane', 'deadLetter', 'other'] as const;
export type TopicKind = (typeof TOPIC_KINDS)[number];

export const COUNTED_STATUSES = ['PENDING', 'IN_FLIGHT', 'DELIVERED', 'DEAD', 'QUEUED'] as const satisfies readonly DeliveryStatus[];

export interface CostCounters {
  /** process.cpuUsage() user + system, µs. */
  cpuMicros: number;
  /** Every Firestore read, write and delete (runtime.firestoreOps): counter writes included. */
  firestore: { reads: number; writes: number; deletes: number };
  /**
   * What went to Firestore, by collection, as it bills (firestore-meter.ts: a meter on the
   * client's RPCs, whatever store sent them). `firestore` is the stores' own count of the same.
   */
  wire: OpsByCollection;
  /**
   * The crash backstop (docs/delivery-guarantees.md), also counted in `firestore`: intake
   * journal documents written and the events in them, batches the reconciler removed, and its
   * queries that found nothing (its fixed polling, like the pump's).
   */
  backstop: { journalWrites: number; journalEvents: number; batchesRemoved: number; emptyPolls: number };
  /**
   * Success-rate counter writes (FirestoreCounterStore.add): `writes` documents written (one per
   * document per flush, also counted in `firestore.writes`), in `flushes` batched commits.
   */
  rates: { writes: number; flushes: number };
  /**
   * Retry pump rounds (each is two queries: due PENDING, expired IN_FLIGHT claims), those that
   * found nothing, and the due deliveries found.
   */
  pump: { rounds: number; emptyRounds: number; found: number };
  /**
   * Suspension check runs (DestinationCounters.foldRecent) completed, those that found no
   * destination active (the deferred work of past traffic is done), and the destinations
   * they found active and the rollups they wrote, summed.
   */
  checks: { runs: number; idleRuns: number; active: number; folded: number };
  functions: Record<FunctionName | 'other', FunctionCount>;
  published: Record<TopicKind, TopicCount>;
  /** Messages the batcher pulled from the batch lane (a batched destination's events): Pub/Sub bills their delivery as a push's. */
  pulled: TopicCount;
  /** Delivery records written, by the status they were written with. */
  recorded: Record<(typeof COUNTED_STATUSES)[number], number>;
  /** Records created as documents of their own (not grouped): each a TTL delete when its retention ends. */
  ownRecords: number;
  /** Records written as members of a group (their storage is measured from the group documents: stored-bytes.ts). */
  groupedRecords: number;
  /** Lines Herald's logger wrote at INFO and above, and their bytes. */
  logs: { lines: number; bytes: number; warnings: number; errors: number };
  /**
   * Usage metering (docs/usage.md): calls of runtime.counters.meter, and the process's CPU time
   * during them, µs (a synchronous sum in memory: what the process did meanwhile is the call's,
   * a helper thread's work apart, so it errs high).
   */
  usage: { meters: number; meterMicros: number };
}

/** `counterLogFrom`: also send the counter writes logged from this index on (the log has one entry per counted counter write). */
export type ParentMessage = { type: 'snapshot'; seq: number; counterLogFrom?: number } | { type: 'stop' };

export type ChildMessage =
  | { type: 'ready'; url: string; adminToken: string; ingestToken: string; eventsTopic: string; timeScale: number; pumpIntervalMs: number; rateFlushMs: number; counterBucketMs: number }
  | { type: 'snapshot'; seq: number; counters: CostCounters; problems: string[]; counterLog?: CounterWrite[] }
  | { type: 'stopped' }
  | { type: 'failed'; message: string };

type Numbers = number | { [key: string]: Numbers };

/** `after − before`, leaf by leaf. */
export function subtract<T>(after: T, before: T): T {
  const go = (a: Numbers, b: Numbers): Numbers => {
    if (typeof a === 'number') return a - (b as number);
    return Object.fromEntries(Object.entries(a).map(([k, v]) => [k, go(v, (b as Record<string, Numbers>)[k] ?? 0)]));
  };
  return go(after as Numbers, before as Numbers) as T;
}
