/**
 * The messages between `npm run bench -- rate` (rate.ts) and its delivering workers
 * (rate-worker.ts), over the fork IPC channel. Every time is epoch ms
 * (performance.timeOrigin + performance.now() in the process that took it).
 */

export interface WorkerStart {
  type: 'start';
  /** Full subscription names (projects/P/subscriptions/S) to pull from. */
  subscriptions: string[];
  /** Flow control per subscription: messages held at once. */
  maxMessages: number;
  /** This worker also runs the retry pump, every this many ms. */
  pumpIntervalMs?: number;
}

export type ParentMessage = WorkerStart | { type: 'status' } | { type: 'stop' };

/** What the workers' deliverFromLane calls came to, per destination. */
export interface OutcomeCounts {
  /** Attempts by decision (delivered, throttle, retry, dead, …). */
  attempted: Record<string, number>;
  deferred: number;
  'handed-over': number;
  duplicate: number;
  queued: number;
  rejected: number;
  /** A bundle's member that failed, published again alone. */
  'published-again': number;
  /** deliverFromLane threw (the message was nacked). */
  errors: number;
}

export const emptyOutcomes = (): OutcomeCounts => ({ attempted: {}, deferred: 0, 'handed-over': 0, duplicate: 0, queued: 0, rejected: 0, 'published-again': 0, errors: 0 });

/** One lease from a destination's rate-control document (one committed write). */
export interface LeaseLog {
  destinationId: string;
  /** When the lease transaction committed, and how long it took (the worker's event loop included). */
  at: number;
  tookMs: number;
  /** The worker's backlog it reported: deliveries waiting for a turn, and those deferred lately. */
  backlog: number;
  /** The controller's rate after it. */
  rate: number;
  /** How many workers shared the grid (the leasing worker sends one turn in that many), and how long until it leases again. */
  holders: number;
  spanMs: number;
}

/** A document write other than a lease: a success-rate counter (one per document per flush) or a delivery record. */
export interface DocWrite {
  doc: string;
  at: number;
}

export interface WorkerStatus {
  type: 'status';
  worker: number;
  outcomes: Record<string, OutcomeCounts>;
  /** Messages being processed now (pulled, not yet acked or nacked). */
  inFlight: number;
  /** The controller's rate per destination as this worker last leased it. */
  rates: Record<string, number>;
  pump?: { rounds: number; due: number; sent: number };
  /** Deferred deliveries this worker brought forward (rate control's grants), per destination. */
  broughtForward: Record<string, number>;
}

export interface WorkerReport extends Omit<WorkerStatus, 'type'> {
  type: 'report';
  leases: LeaseLog[];
  /** Leases that threw (the transaction failed). */
  leaseErrors: number;
  counterWrites: DocWrite[];
  recordWrites: DocWrite[];
  /** When each HTTP attempt started, by the receiver path it went to (doc = the URL's path). */
  attemptStarts: DocWrite[];
  logs: { warnings: number; errors: number; firstErrors: string[] };
  firstFailures: string[];
  cpuMicros: number;
  /** The worker's age when it reported, ms. */
  uptimeMs: number;
  /** Its event-loop delay since it started delivering, ms: late timers send late, and bunched. */
  loopDelayMs: { p99?: number; max?: number };
}

export type WorkerMessage = { type: 'ready'; worker: number } | { type: 'failed'; message: string } | WorkerStatus | WorkerReport;
