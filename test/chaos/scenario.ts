import { z } from 'zod';

/**
 * The chaos test's plan, as data and pure code: what it publishes, when it kills Herald, when
 * it pauses the Pub/Sub emulator, and how each receiver misbehaves — all drawn from one seed,
 * so a failing run can be played again with `--seed`.
 */

export const chaosOptionsSchema = z.strictObject({
  events: z.number().int('events must be a whole number').min(1, 'events must be at least 1').max(100_000, 'events must be at most 100000').default(2000),
  destinations: z.number().int('destinations must be a whole number').min(1, 'destinations must be 1-20').max(20, 'destinations must be 1-20').default(4),
  kills: z.number().int('kills must be a whole number').min(0, 'kills must be 0-20').max(20, 'kills must be 0-20').default(2),
  seed: z.number().int('seed must be a whole number').min(0, 'seed must be 0-2147483647').max(2 ** 31 - 1, 'seed must be 0-2147483647'),
  /** Events published per second. */
  rate: z.number().positive('rate must be above 0').max(500, 'rate must be at most 500').default(50),
  /** Times the Pub/Sub emulator is paused (SIGSTOP), each for pauseSeconds. */
  pauses: z.number().int('pauses must be a whole number').min(0, 'pauses must be 0-10').max(10, 'pauses must be 0-10').default(1),
  pauseSeconds: z.number().positive('pause-seconds must be above 0').max(60, 'pause-seconds must be at most 60').default(5),
  /** How long the outage receiver is down, and the slow one slower than the attempt timeout. */
  outageSeconds: z.number().positive('outage-seconds must be above 0').max(300, 'outage-seconds must be at most 300').default(20),
  /** The reconciler's grace (HERALD_RECONCILE_AFTER_MS): how long after ingest it checks an event. */
  reconcileAfterSeconds: z.number().min(1, 'reconcile-after must be at least 1').max(86_400, 'reconcile-after must be at most 86400').default(60),
  /** Instances of the functions in Herald's process (`npm start -- --instances N`), each with its own caches; a kill takes them all. */
  instances: z.number().int('instances must be a whole number').min(1, 'instances must be 1-16').max(16, 'instances must be 1-16').default(1),
  /** Events per POST /ingest (a CloudEvents batch): a destination's share of one goes as one bundle, one push (app/delivery/deliver.ts deliverPush). */
  perPost: z.number().int('per-post must be a whole number').min(1, 'per-post must be 1-100').max(100, 'per-post must be 1-100').default(1),
  /** Every destination batched (issue 37): `batch: CHAOS_BATCH`. */
  batched: z.boolean().default(false),
  /** Every destination ordered per key (issue 38), each event with one of CHAOS_KEYS partition keys. */
  ordered: z.boolean().default(false),
  /** Share of Firestore commits whose reply is lost after the write took effect (test/support/lost-replies.ts; issue 51). */
  loseReplies: z.number().min(0, 'lose-replies must be 0-0.5').max(0.5, 'lose-replies must be 0-0.5').default(0),
  /**
   * Herald as `npm run rehearse` (issue 54): each function a process of its own. A kill is then a
   * SIGKILL of one function process (the rehearsal starts another), and once in the run every
   * process is restarted in turn with SIGTERM, as a rollout does.
   */
  rehearsal: z.boolean().default(false),
  /**
   * After quiet, read what Herald shows (log, stats, usage) and wait for the reconciler to count
   * the last journal batches (a minute and more). `npm test`'s small runs leave it out: they judge
   * delivery; usage and the views have tests of their own (usage.test.ts, usage-kill.test.ts).
   */
  readViews: z.boolean().default(true),
  /** Give up waiting for quiet after this long (what is not settled then is reported, scheduled or lost). */
  quietTimeoutSeconds: z.number().positive('quiet-timeout must be above 0').max(3600, 'quiet-timeout must be at most 3600').default(900),
});

export type ChaosOptions = z.infer<typeof chaosOptionsSchema>;

/** A run is batched or ordered, not both: a destination takes one or the other. */
export const chaosOptionsChecked = chaosOptionsSchema
  .refine((o) => !(o.batched && o.ordered), { message: '--batched and --ordered cannot be combined: a destination takes batches or ordering, not both' })
  .refine((o) => !(o.rehearsal && (o.instances > 1 || o.loseReplies > 0)), { message: '--rehearsal runs each function as processes of its own: not with --instances or --lose-replies (which act inside one process)' });

/** The batch every destination takes with `--batched`. */
export const CHAOS_BATCH = { maxEvents: 20, maxWaitMs: 500 };

/** With `--ordered`: event i carries partitionkey `k-<i mod CHAOS_KEYS>`. */
export const CHAOS_KEYS = 10;

/** How a receiver misbehaves; destination i gets BEHAVIOURS[i % 4]. */
export const BEHAVIOURS = ['healthy', 'flaky', 'outage', 'slow'] as const;
export type Behaviour = (typeof BEHAVIOURS)[number];

/** The flaky receiver answers 503 to this share of requests. */
export const FLAKY_503_SHARE = 0.3;
/** The slow receiver's answer during its slow window: past Herald's 5 s attempt timeout. */
export const SLOW_REPLY_MS = 6_000;

export interface ReceiverPlan {
  destinationId: string;
  behaviour: Behaviour;
  /** Policy the destination is registered with. */
  policy: string;
  /** outage: down (connections refused); slow: every answer takes SLOW_REPLY_MS. Ms from the start. */
  window?: { fromMs: number; toMs: number };
}

export interface ChaosPlan {
  publishMs: number;
  /** Ms from the start at which Herald's process group is SIGKILLed (and started again at once). */
  kills: number[];
  /** With --rehearsal: when every function process is restarted in turn with SIGTERM. */
  rollingRestartAtMs?: number;
  /** Pub/Sub emulator pauses: ms from the start, and for how long. */
  pauses: { atMs: number; forMs: number }[];
  receivers: ReceiverPlan[];
}

/** mulberry32: a small, fast, seeded generator in [0, 1). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function planChaos(o: ChaosOptions): ChaosPlan {
  const random = seededRandom(o.seed);
  const publishMs = (o.events / o.rate) * 1000;
  const between = (from: number, to: number) => Math.round(from + (to - from) * random());
  // Kills spread over the publishing and the start of the drain (from 10 % to 130 % of the
  // publishing time), one in each equal part, each at a random moment within its part.
  const span = { from: 0.1 * publishMs, to: 1.3 * publishMs };
  const part = (span.to - span.from) / Math.max(1, o.kills);
  const kills = Array.from({ length: o.kills }, (_, k) => between(span.from + k * part, span.from + (k + 1) * part));
  const pauses = Array.from({ length: o.pauses }, () => ({ atMs: between(0.2 * publishMs, 0.9 * publishMs), forMs: o.pauseSeconds * 1000 }));
  const receivers = Array.from({ length: o.destinations }, (_, i): ReceiverPlan => {
    const behaviour = BEHAVIOURS[i % BEHAVIOURS.length]!;
    const id = `chaos-${i}-${behaviour}`;
    // The healthy one keeps the default preset (threshold suspension and all); the others
    // retry every failure (eventarc), so the run ends with their events delivered, not QUEUED.
    const policy = behaviour === 'healthy' ? 'event-platform' : 'eventarc';
    if (behaviour !== 'outage' && behaviour !== 'slow') return { destinationId: id, behaviour, policy };
    const fromMs = between(0.1 * publishMs, 0.7 * publishMs);
    return { destinationId: id, behaviour, policy, window: { fromMs, toMs: fromMs + o.outageSeconds * 1000 } };
  });
  // Drawn last, so a seed's other moments are those of a run without --rehearsal.
  const rolling = o.rehearsal ? { rollingRestartAtMs: between(0.2 * publishMs, 0.5 * publishMs) } : {};
  return { publishMs, kills: kills.sort((a, b) => a - b), pauses, receivers, ...rolling };
}
