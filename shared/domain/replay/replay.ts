import { z } from 'zod';
import { PubSubMessage } from '../events/cloudevents-pubsub';
import { DeliveryRecord, DeliveryReplay, isDeliveryId } from '../retry/delivery';
import { transition } from '../retry/delivery-state';
import { DESTINATION_ID } from '../destinations/destination';
import { ACCOUNT_ID, internalDestinationId, splitDestinationId } from '../ids';
import { issuesFromZod, matchesType, Parsed, ValidationIssue } from '../events/event';

/**
 * Replay of dead letters (docs/replay.md), the pure part: the request, which dead letters
 * it selects, what a replayed delivery record becomes, and the report's bookkeeping.
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

// ---------------------------------------------------------------- selection

/** A message read from the dead-letter subscription. */
export interface DeadLetter {
  messageId: string;
  /** When it reached the dead-letter topic (its publishTime there): what `since`/`until` select on. */
  deadLetteredAt: Date;
  message: PubSubMessage;
}

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

export type Selection =
  /** Outside the request's destination, window or types: left on the topic untouched, not counted. */
  | { kind: 'unselected' }
  /** Selected, but no delivery to send again (Herald rejected the message before any delivery). */
  | { kind: 'not-replayable'; facts: DeadLetterFacts; detail: string }
  | { kind: 'replayable'; facts: DeadLetterFacts & { deliveryId: string; destination: string } };

export function factsOf(letter: DeadLetter): DeadLetterFacts {
  const a = letter.message.attributes;
  const facts: DeadLetterFacts = { messageId: letter.messageId, deadLetteredAt: letter.deadLetteredAt.toISOString() };
  const copy = (key: keyof DeadLetterFacts, attribute: string) => {
    const value = a[attribute];
    if (value !== undefined) facts[key] = value;
  };
  copy('destination', 'herald-destination');
  copy('deliveryId', 'herald-delivery-id');
  copy('eventId', 'ce-id');
  copy('eventSource', 'ce-source');
  copy('eventType', 'ce-type');
  return facts;
}

/** since ≤ t < until: consecutive windows never select a dead letter twice. */
export function inWindow(at: Date, request: Pick<ReplaySelection, 'since' | 'until'>): boolean {
  const t = at.toISOString();
  return (request.since === undefined || t >= request.since) && (request.until === undefined || t < request.until);
}

/**
 * What a run selects: the request, its window closed at the run's start. A replayed event
 * that dies again while the replay runs is dead-lettered again after that, so the run never
 * picks up (and never acks) the dead letters it causes: the next replay finds them.
 */
export function runSelection(request: ReplaySelection, startedAt: string): ReplaySelection {
  return { ...request, until: request.until !== undefined && request.until < startedAt ? request.until : startedAt };
}

export function selectDeadLetter(letter: DeadLetter, request: ReplaySelection): Selection {
  const facts = factsOf(letter);
  // An account's replay sees its own destinations' dead letters alone; the rest stay for their owners.
  if (request.account !== undefined && (facts.destination === undefined || splitDestinationId(facts.destination).account !== request.account)) return { kind: 'unselected' };
  if (request.destination !== undefined && facts.destination !== (request.account !== undefined ? internalDestinationId(request.account, request.destination) : request.destination)) return { kind: 'unselected' };
  if (!inWindow(letter.deadLetteredAt, request)) return { kind: 'unselected' };
  if (request.eventTypes !== undefined && (facts.eventType === undefined || !matchesType(request.eventTypes, facts.eventType))) return { kind: 'unselected' };
  const { deliveryId, destination } = facts;
  if (deliveryId === undefined || destination === undefined) return { kind: 'not-replayable', facts, detail: whyNoDelivery(letter.message.attributes) };
  if (!isDeliveryId(deliveryId) || !deliveryId.startsWith(`${destination}.`)) {
    return { kind: 'not-replayable', facts, detail: `herald-delivery-id ${JSON.stringify(deliveryId)} is not a delivery of destination ${JSON.stringify(destination)}` };
  }
  return { kind: 'replayable', facts: { ...facts, deliveryId, destination } };
}

function whyNoDelivery(attributes: Record<string, string>): string {
  const reason = attributes['herald-reason'];
  if (attributes['herald-delivery-id'] === undefined && reason !== undefined) {
    const error = attributes['herald-error'];
    return `Herald rejected this message (${reason}${error ? `: ${error}` : ''}) before any delivery was made: there is no delivery to send again`;
  }
  const backstop = attributes.CloudPubSubDeadLetterSourceSubscription;
  if (backstop !== undefined) return `Pub/Sub's backstop dead-lettered it from ${backstop} after repeated failed pushes: there is no delivery to send again`;
  return 'no herald-destination and herald-delivery-id attributes: not a dead delivery';
}

// ---------------------------------------------------------------- the delivery record

/**
 * DEAD → PENDING through the state machine's `redeliver` (a fresh retry budget, due now), the
 * run that died kept in `replays`. Undefined unless the record is DEAD.
 */
export function replayedRecord(current: DeliveryRecord, replayId: string, now: Date): DeliveryRecord | undefined {
  if (current.status !== 'DEAD') return undefined;
  const next = transition(current, { type: 'redeliver', now });
  if (!next.ok) return undefined;
  const run: DeliveryReplay = withoutUndefined({
    replayId,
    at: now.toISOString(),
    attempts: current.attempts,
    firstAttemptAt: current.firstAttemptAt,
    lastAttemptAt: current.lastAttemptAt,
    reason: current.reason,
    lastError: current.lastError,
  });
  return { ...next.state, replays: [...(current.replays ?? []), run].slice(-REPLAY_LIMITS.historyEntries) };
}

// ---------------------------------------------------------------- the report

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

const ZERO: ReplayCounts & Pick<ReplayReport, 'skippedBy' | 'items' | 'itemsOmitted' | 'runs'> = {
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

function selectionOf(request: ReplayRequest): ReplaySelection {
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

/**
 * A trigger that came while another replay runs: the replay is refused (a report that says
 * which replay ran and what to do), never run beside it. A report that exists and is not
 * waiting to start (a redelivered trigger of one that ran) is left as it is.
 */
export function refusedWhileRunning(existing: ReplayReport | undefined, start: Omit<RunStart, 'leaseMs' | 'token'>, held: RunnerLock): ReplayReport | undefined {
  const at = start.now.toISOString();
  // Only a replay of the same scope is refused (app/retry/replay-run.ts): its id, without the account's prefix, is the caller's own.
  const error = `replay ${held.holder.slice(held.holder.indexOf(':') + 1)} was running (until ${held.until} at the latest); nothing was replayed: start this one again once it has ended`;
  if (existing === undefined) {
    return { ...rejectedReport(start.id, start.messageId, [], start.now), request: selectionOf(start.request), dryRun: start.request.dryRun === true, error };
  }
  if (existing.status !== 'queued') return undefined;
  return { ...existing, status: 'rejected', triggerMessageId: start.messageId, updatedAt: at, endedAt: at, error };
}

export interface RunStart {
  id: string;
  request: ReplayRequest;
  messageId: string;
  now: Date;
  /** How long the run owns the replay (the trigger's ack deadline: Pub/Sub redelivers after it). */
  leaseMs: number;
  token: string;
}

export type RunDecision =
  | { kind: 'run'; report: ReplayReport; resumed: boolean }
  /** Already ran, or another run owns it: this trigger is a duplicate and changes nothing. */
  | { kind: 'duplicate'; report: ReplayReport };

/**
 * Whether a trigger runs the replay: once per id. A queued report (from the admin API) or none
 * starts; a running one whose owner outlived its lease (its function died) is taken over and
 * continues, its counts kept; anything else is a duplicate delivery of the trigger.
 */
export function beginRun(existing: ReplayReport | undefined, start: RunStart): RunDecision {
  const at = start.now.toISOString();
  const lease = { runningUntil: new Date(start.now.getTime() + start.leaseMs).toISOString(), runToken: start.token, updatedAt: at };
  if (existing === undefined) {
    const report: ReplayReport = {
      id: start.id,
      status: 'running',
      request: selectionOf(start.request),
      dryRun: start.request.dryRun === true,
      via: 'topic',
      triggerMessageId: start.messageId,
      createdAt: at,
      startedAt: at,
      ...ZERO,
      skippedBy: {},
      items: [],
      runs: 1,
      ...lease,
    };
    return { kind: 'run', report, resumed: false };
  }
  if (existing.status === 'queued') {
    return { kind: 'run', report: { ...existing, status: 'running', triggerMessageId: start.messageId, startedAt: at, runs: 1, ...lease }, resumed: false };
  }
  if (existing.status === 'running' && existing.runningUntil !== undefined && existing.runningUntil <= at) {
    return { kind: 'run', report: { ...existing, runs: existing.runs + 1, ...lease }, resumed: true };
  }
  return { kind: 'duplicate', report: existing };
}

/** The report with one more selected dead letter counted (and listed, while there is room). */
export function addItem(report: ReplayReport, item: ReplayItem): ReplayReport {
  const next: ReplayReport = { ...report, matched: report.matched + 1 };
  switch (item.outcome) {
    case 'redelivered':
      next.redelivered++;
      break;
    case 'would-redeliver':
      next.wouldRedeliver++;
      break;
    case 'failed':
      next.failed++;
      break;
    case 'skipped':
      next.skipped++;
      if (item.reason !== undefined) next.skippedBy = { ...report.skippedBy, [item.reason]: (report.skippedBy[item.reason] ?? 0) + 1 };
      break;
  }
  if (report.items.length < REPLAY_LIMITS.reportItems) next.items = [...report.items, item];
  else next.itemsOmitted++;
  return next;
}

const STATUS_AFTER: Record<ReplayEnd, ReplayStatus> = { drained: 'done', limit: 'done', 'time-up': 'incomplete', error: 'failed' };

export function finishRun(report: ReplayReport, ended: ReplayEnd, now: Date, error?: string): ReplayReport {
  const { runningUntil: _until, runToken: _token, ...rest } = report;
  const at = now.toISOString();
  return { ...rest, status: STATUS_AFTER[ended], ended, endedAt: at, updatedAt: at, ...(error !== undefined ? { error } : {}) };
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
function withoutUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
