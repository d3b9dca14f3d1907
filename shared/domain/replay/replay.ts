import { z } from 'zod';
import { DESTINATION_ID } from '../destinations/destination';
import { ACCOUNT_ID, splitDestinationId } from '../ids';
import { issuesFromZod, Parsed, ValidationIssue } from '../events/event';

/**
 * Replay of dead letters (docs/replay.md), the pure part: the request and the report's
 * bookkeeping here; which dead letters it selects and what a replayed delivery record becomes
 * in replay-selection.ts; a run's start, count and end in replay-runs.ts.
 * The I/O (pulling the dead-letter subscription, the stores) is in shared/app/retry/replay-run.ts.
 */

export const REPLAY_LIMITS = {
  /** Most dead letters one request may select. */
  maxLimit: 100_000,
  maxEventTypes: 100,
  /** Dead letters listed one by one in a report (the counts cover them all). */
  reportItems: 200,
  /** Replayed runs a delivery record keeps (the newest). */
  historyEntries: 20,
} as const;

/** A replay id: also the report's document id. Pub/Sub message ids (digits) fit it. */
export const REPLAY_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

const timestamp = (name: string) =>
  z.iso
    .datetime({ offset: true, error: `${name} must be an ISO 8601 timestamp with seconds and a zone, e.g. 2026-11-23T14:00:00Z` })
    .transform((v) => new Date(v).toISOString());

const REQUEST_SHAPE = '{"destination"?, "since"?, "until"?, "eventTypes"?, "limit"?, "dryRun"?, "id"?, "account"?}';

export const replayRequestSchema = z
  .strictObject(
    {
      id: z
        .string({ error: 'id must be a string' })
        .regex(REPLAY_ID, 'id must be 1-64 letters, digits, "_" or "-", starting with a letter or digit')
        .optional(),
      /** Only this account's dead letters; `destination` is then the account's own id for it. Absent: every account's (the operator). */
      account: z.string({ error: 'account must be a string' }).regex(ACCOUNT_ID, 'account must be an account id: 1-63 lowercase letters, digits and hyphens').optional(),
      destination: z
        .string({ error: 'destination must be a string' })
        .regex(DESTINATION_ID, 'destination must be a destination id: 1-63 lowercase letters, digits and hyphens, starting and ending with a letter or digit')
        .optional(),
      since: timestamp('since').optional(),
      until: timestamp('until').optional(),
      eventTypes: z
        .array(z.string({ error: 'an event type must be a string' }).min(1, 'an event type must not be empty').max(256, 'an event type is at most 256 characters'), {
          error: 'eventTypes must be an array of event types',
        })
        .min(1, 'eventTypes must list at least one type (leave it out to replay every type)')
        .max(REPLAY_LIMITS.maxEventTypes, `eventTypes lists at most ${REPLAY_LIMITS.maxEventTypes} types`)
        .refine((ts) => ts.every((t) => !t.slice(0, -1).includes('*')), 'a wildcard * may only end an event type (e.g. com.example.*)')
        .optional(),
      limit: z
        .number({ error: 'limit must be a number' })
        .int('limit must be a whole number')
        .min(1, `limit must be from 1 to ${REPLAY_LIMITS.maxLimit}`)
        .max(REPLAY_LIMITS.maxLimit, `limit must be from 1 to ${REPLAY_LIMITS.maxLimit}`)
        .optional(),
      dryRun: z.boolean({ error: 'dryRun must be true or false' }).optional(),
    },
    {
      error: (issue) =>
        issue.code === 'unrecognized_keys'
          ? `unknown field${issue.keys.length === 1 ? '' : 's'} ${issue.keys.join(', ')}: a replay request is ${REQUEST_SHAPE}`
          : `a replay request must be a JSON object ${REQUEST_SHAPE}`,
    },
  )
  .refine((r) => r.since === undefined || r.until === undefined || r.since <= r.until, { path: ['until'], message: 'until must not be before since' });

export type ReplayRequest = z.output<typeof replayRequestSchema>;
/** What a replay does, without the id it runs under. */
export type ReplaySelection = Omit<ReplayRequest, 'id'>;

export function parseReplayRequest(body: unknown): Parsed<ReplayRequest> {
  const parsed = replayRequestSchema.safeParse(body);
  if (!parsed.success) return { ok: false, issues: issuesFromZod(parsed.error) };
  return { ok: true, value: withoutUndefined(parsed.data) };
}

/** The replay topic's message body: UTF-8 JSON holding a replay request. */
export function parseReplayMessage(data: Buffer): Parsed<ReplayRequest> {
  let body: unknown;
  try {
    body = JSON.parse(data.toString('utf8'));
  } catch (e) {
    return { ok: false, issues: [{ path: 'data', message: `the message data must be a JSON replay request ${REQUEST_SHAPE}: ${(e as Error).message}` }] };
  }
  return parseReplayRequest(body);
}

// ---------------------------------------------------------------- the report

/** What a report says of one dead letter. */
export interface DeadLetterFacts {
  messageId: string;
  deadLetteredAt: string;
  destination?: string;
  deliveryId?: string;
  eventId?: string;
  eventSource?: string;
  eventType?: string;
}

export const REPLAY_STATUSES = ['queued', 'running', 'done', 'incomplete', 'failed', 'rejected'] as const;
export type ReplayStatus = (typeof REPLAY_STATUSES)[number];
export const FINAL_STATUSES: ReadonlySet<ReplayStatus> = new Set(['done', 'incomplete', 'failed', 'rejected']);

/** Why a run ended: the backlog read to its end, the request's limit, the run's time, or a fault. */
export type ReplayEnd = 'drained' | 'limit' | 'time-up' | 'error';

export const SKIP_REASONS = ['not-replayable', 'not-dead', 'no-record', 'destination-deleted', 'type-unsubscribed', 'duplicate'] as const;
export type SkipReason = (typeof SKIP_REASONS)[number];

/**
 * Skipped dead letters a real replay acks (removes from the topic): their delivery record has
 * moved on (or another copy was just replayed), so the copy is stale. A later death publishes a
 * new one. Every other skipped dead letter stays on the topic.
 */
export const STALE_SKIPS: ReadonlySet<SkipReason> = new Set(['not-dead', 'duplicate']);

export type ItemOutcome = 'redelivered' | 'would-redeliver' | 'skipped' | 'failed';

export interface ReplayItem extends DeadLetterFacts {
  outcome: ItemOutcome;
  reason?: SkipReason;
  detail?: string;
  /** Whether the replay acked it (it left the dead-letter topic). */
  removed: boolean;
}

export interface ReplayCounts {
  /** Dead letters read, selected or not. */
  scanned: number;
  /** Selected by destination, window and types (up to `limit`). */
  matched: number;
  /** Made PENDING again; the retry pump sends them at the destination's rate. */
  redelivered: number;
  /** Dry runs: would have been redelivered. */
  wouldRedeliver: number;
  skipped: number;
  /** Herald could not redeliver them (a store fault): left on the topic. */
  failed: number;
}

export interface ReplayReport extends ReplayCounts {
  id: string;
  status: ReplayStatus;
  request: ReplaySelection;
  dryRun: boolean;
  /** `admin`: POST /admin/replays published the trigger; `topic`: a message published straight onto the replay topic. */
  via: 'admin' | 'topic';
  /** The trigger's Pub/Sub message id, once the function has it. */
  triggerMessageId?: string;
  createdAt: string;
  updatedAt: string;
  startedAt?: string;
  endedAt?: string;
  ended?: ReplayEnd;
  /** Function runs that worked on it: more than 1 when a run died and a redelivered trigger took over. */
  runs: number;
  /** While running: the run owns the replay until then; a redelivered trigger takes over after it. */
  runningUntil?: string;
  /** The owning run's token (never shown). */
  runToken?: string;
  skippedBy: Partial<Record<SkipReason, number>>;
  /** The first REPLAY_LIMITS.reportItems dead letters selected, each with what became of it. */
  items: ReplayItem[];
  /** Selected dead letters beyond those listed. */
  itemsOmitted: number;
  error?: string;
  issues?: ValidationIssue[];
}

export type ReplayView = Omit<ReplayReport, 'runToken'>;
export type ReplaySummary = Omit<ReplayView, 'items'>;

export const ZERO: ReplayCounts & Pick<ReplayReport, 'skippedBy' | 'items' | 'itemsOmitted' | 'runs'> = {
  scanned: 0,
  matched: 0,
  redelivered: 0,
  wouldRedeliver: 0,
  skipped: 0,
  failed: 0,
  skippedBy: {},
  items: [],
  itemsOmitted: 0,
  runs: 0,
};

export function selectionOf(request: ReplayRequest): ReplaySelection {
  const { id: _id, ...selection } = request;
  return selection;
}

/** The message on the replay topic that runs replay `id` (the `replay` function's trigger). */
export function replayTriggerMessage(request: ReplayRequest, id: string): { data: Buffer; attributes: Record<string, string> } {
  return { data: Buffer.from(JSON.stringify({ ...request, id })), attributes: { 'herald-type': 'herald.replay.requested', 'herald-replay-id': id } };
}

/** POST /admin/replays: the report exists (queued) before the trigger is published, so it can be polled at once. */
export function queuedReport(id: string, request: ReplayRequest, now: Date): ReplayReport {
  const at = now.toISOString();
  return { id, status: 'queued', request: selectionOf(request), dryRun: request.dryRun === true, via: 'admin', createdAt: at, updatedAt: at, ...ZERO, skippedBy: {}, items: [] };
}

/** A trigger message that is not a valid request: kept as a report so whoever published it can see why. */
export function rejectedReport(id: string, messageId: string, issues: ValidationIssue[], now: Date): ReplayReport {
  const at = now.toISOString();
  return {
    id,
    status: 'rejected',
    request: {},
    dryRun: false,
    via: 'topic',
    triggerMessageId: messageId,
    createdAt: at,
    updatedAt: at,
    endedAt: at,
    ...ZERO,
    skippedBy: {},
    items: [],
    error: 'invalid replay request: nothing was replayed',
    issues,
  };
}

/**
 * Where a replay's report is kept. Replay ids are chosen per account: an account's replay under
 * `<account>:<id>` (":" is never in an id, so no account's key meets another's or an unscoped
 * one), the operator's unscoped replays under their id, as every report was kept before ids
 * were per account (those are still read there: app/retry/replay-reports.ts).
 */
export function replayKey(account: string | undefined, id: string): string {
  return account === undefined ? id : `${account}:${id}`;
}

export function reportKey(report: Pick<ReplayReport, 'id' | 'request'>): string {
  return replayKey(report.request.account, report.id);
}

/**
 * Which replay may run now: one at a time, since two would each see only the dead letters the
 * other holds back. Replays of other scopes (accounts, or the operator's across them) wait their
 * turn for it rather than being refused (app/retry/replay-run.ts).
 */
export interface RunnerLock {
  /** The holder's key (replayKey). */
  holder: string;
  /** The holder's lease: after it the runner is free again (its function died). */
  until: string;
  /** The holder's account; absent: the operator's replay across accounts (or a lock from before accounts took turns). */
  account?: string;
}

/**
 * Replay `id` takes the runner if it is free, its own already, or its holder's lease ran out;
 * else it is refused with the holder. Checked where every run starts — however its trigger
 * was published — not only where the admin API publishes one.
 */
export function takeRunner(lock: RunnerLock | undefined, id: string, until: Date, now: Date, account?: string): { ok: true; lock: RunnerLock } | { ok: false; held: RunnerLock } {
  if (lock && lock.holder !== id && lock.until > now.toISOString()) return { ok: false, held: lock };
  return { ok: true, lock: { holder: id, until: until.toISOString(), ...(account !== undefined ? { account } : {}) } };
}

export function replayViewOf(report: ReplayReport): ReplayView {
  const { runToken: _token, ...view } = report;
  // An account's own replay names its destinations as the account does (`orders`, not `acme_orders`).
  if (report.request.account === undefined) return view;
  return { ...view, items: view.items.map((i) => (i.destination !== undefined ? { ...i, destination: splitDestinationId(i.destination).id } : i)) };
}

export function replaySummaryOf(report: ReplayReport): ReplaySummary {
  const { runToken: _token, items: _items, ...summary } = report;
  return summary;
}

/** Firestore refuses undefined: optional fields are absent instead. */
export function withoutUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
