import { randomUUID } from 'node:crypto';
import { fromPubSubMessage } from '../../domain/events/cloudevents-pubsub';
import { DeliveryRecord, DeliveryStatus } from '../../domain/retry/delivery';
import { Destination } from '../../domain/destinations/destination';
import { HeraldEvent, matchesType } from '../../domain/events/event';
import { queuedReport, ReplayEnd, ReplayItem, replayKey, ReplayReport, ReplayRequest, ReplaySelection, reportKey, RunnerLock, SkipReason, STALE_SKIPS } from '../../domain/replay/replay';
import { addItem, beginRun, finishRun, refusedWhileRunning } from '../../domain/replay/replay-runs';
import { DeadLetter, replayedRecord, runSelection, selectDeadLetter, Selection } from '../../domain/replay/replay-selection';
import { forEachLimited } from '../support/for-each-limited';
import { findReplay, QUEUED_REPLAY_WAIT_MS } from './replay-reports';
import { newErrorId, STORAGE_BUSY } from '../support/unavailable-causes';
import { JournalReader, NO_JOURNAL, pulledParts } from '../lanes/lanes';
import { Clock, Logger } from '../../ports/clock';
import { DeadLetterQueue, PulledMessage } from '../../ports/messaging';
import { DeliveryStore } from '../../ports/deliveries';
import { DestinationStore } from '../../ports/destinations';
import { ReplayStore } from '../../ports/replay';
import { Metrics } from '../../ports/telemetry';
import { inReplaySpan } from '../tracing/spans';

export interface ReplayDeps {
  replays: ReplayStore;
  deadLetters: DeadLetterQueue;
  deliveries: DeliveryStore;
  /** Read fresh (not the cached directory): a replay acts on the destination as it is now. */
  destinations: DestinationStore;
  clock: Clock;
  log: Logger;
  /** How long one run works before it stops, releases what it holds and reports `incomplete`. */
  runMs: number;
  /** How long a run owns its replay: the trigger's ack deadline, after which Pub/Sub delivers the trigger again. */
  leaseMs: number;
  /** Dead letters asked for per pull. */
  pullBatch: number;
  /** Least time between two writes of the report while it runs. */
  progressEveryMs: number;
  /**
   * How long a trigger waits, holding its push, for its turn while another account's replay (or
   * an older queued one) has the runner; then it is published again (requeue) and acked, so
   * waiting never uses up the trigger's delivery attempts. 0 / absent: not at all.
   */
  waitMs?: number;
  /** Between two looks at the runner while waiting. */
  pollMs?: number;
  sleep?: (ms: number) => Promise<void>;
  /** The intake journal, for batch lane messages that name their events there (domain/intake/lane-reference.ts). */
  journal?: JournalReader;
  /** Publishes the trigger again on the replay topic; absent: the push is answered `waiting` and Pub/Sub brings it again. */
  requeue?: (trigger: ReplayTrigger) => Promise<void>;
  /** Herald's own metrics; absent: none recorded. */
  metrics?: Metrics;
}

export interface ReplayTrigger {
  id: string;
  request: ReplayRequest;
  /** The trigger's Pub/Sub message id. */
  messageId: string;
}

export type ReplayOutcome =
  | { kind: 'ran'; report: ReplayReport }
  | { kind: 'duplicate'; report: ReplayReport }
  | { kind: 'lost'; report: ReplayReport }
  /** Another replay of the same account (or the operator's) was running: this one was refused, its report says so. */
  | { kind: 'refused'; report: ReplayReport }
  /** Another account's replay, or an older one queued, had the turn: this one stays queued, its trigger published again (`requeued`) or left to come again. */
  | { kind: 'waiting'; report: ReplayReport; requeued: boolean };

/** A pull that brings nothing new this many times in a row: the backlog has been read. */
const EMPTY_PULLS_TO_END = 2;
/** Selected dead letters handled at once (each is a Firestore transaction). */
const CONCURRENCY = 8;
/** Store faults in a row after which the run gives up (Firestore is down: every item would fail). */
const MAX_FAILURES_IN_A_ROW = 10;
/** Held messages stay hidden this long past the run's end, so none comes back to this run. */
const HOLD_MARGIN_SECONDS = 60;

/**
 * One replay (docs/replay.md): reads the dead-letter subscription page by page, selects by
 * destination, window and type, and sends each selected dead delivery again to the
 * destination that failed it — DEAD → PENDING through the state machine, so the retry pump
 * and `deliver` send it at the destination's rate, or QUEUE it while the destination is
 * suspended. What it replayed (or found stale) is acked; every other message is held for
 * the run, so no pull returns it twice, and released at the end, untouched.
 *
 * Runs once per id (see beginRun); stops before `runMs` and reports `incomplete`.
 */
export const runReplay = (deps: ReplayDeps, trigger: ReplayTrigger) => inReplaySpan(trigger.id, () => replayRun(deps, trigger));

async function replayRun(deps: ReplayDeps, trigger: ReplayTrigger): Promise<ReplayOutcome> {
  const token = randomUUID();
  const ids = { replayId: trigger.id, messageId: trigger.messageId, ...(trigger.request.account !== undefined ? { account: trigger.request.account } : {}) };
  const found = await findReplay(deps.replays, trigger.request.account, trigger.id);
  const key = found?.key ?? replayKey(trigger.request.account, trigger.id);
  // One replay at a time, however the trigger was published (the admin API checks too, but a
  // message published straight onto the replay topic comes here alone).
  const turn = await waitForTurn(deps, trigger, key, found?.report.createdAt ?? deps.clock.now().toISOString());
  if (turn.kind === 'wait') {
    // A trigger published straight onto the topic gets its queued report now: its place in the queue.
    const queued = { ...queuedReport(trigger.id, trigger.request, deps.clock.now()), via: 'topic' as const, triggerMessageId: trigger.messageId };
    const report = found?.report ?? ((await deps.replays.create(queued)) ? queued : await deps.replays.get(key));
    if (!report) throw new Error(`replay ${trigger.id}: its queued report was not recorded`);
    const requeued = deps.requeue !== undefined;
    if (deps.requeue) await deps.requeue(trigger);
    deps.log.info(`replay ${trigger.id} waits for its turn: another account's replay, or an older one, reads the dead letters now`, { ...ids, requeued });
    return { kind: 'waiting', report, requeued };
  }
  if (turn.kind === 'refused') {
    const now = deps.clock.now();
    const report = (await deps.replays.update(key, (current) => refusedWhileRunning(current, { ...trigger, now }, turn.held))) ?? (await deps.replays.get(key));
    if (!report) throw new Error(`replay ${trigger.id}: the refusal was not recorded`);
    deps.log.error(`replay ${trigger.id} refused: replay ${turn.held.holder} is running; start it again once that one has ended`, { ...ids, runningReplay: turn.held.holder });
    return { kind: 'refused', report };
  }
  let decision: ReturnType<typeof beginRun> | undefined;
  await deps.replays.update(key, (current) => {
    decision = beginRun(current, { ...trigger, now: deps.clock.now(), leaseMs: deps.leaseMs, token });
    return decision.kind === 'run' ? decision.report : undefined;
  });
  if (!decision) throw new Error(`replay ${trigger.id}: the report store decided nothing`);
  if (decision.kind === 'duplicate') {
    // A run of this replay that is still going keeps the runner; one that ended gives it back.
    if (decision.report.status !== 'running') await deps.replays.releaseRunner(key);
    deps.log.info(`replay trigger ignored: replay ${trigger.id} is ${decision.report.status} (a redelivered or repeated trigger never runs a replay twice)`, {
      ...ids,
      status: decision.report.status,
    });
    return { kind: 'duplicate', report: decision.report };
  }
  deps.log.info(decision.resumed ? 'replay resumed: its previous run stopped without finishing' : 'replay started', {
    ...ids,
    request: decision.report.request,
    dryRun: decision.report.dryRun,
    runs: decision.report.runs,
  });
  const outcome = await new ReplayRun(deps, decision.report, token, key).run();
  if (outcome.kind === 'ran') await deps.replays.releaseRunner(key);
  return outcome;
}

type Turn = { kind: 'run' } | { kind: 'refused'; held: RunnerLock } | { kind: 'wait' };

/**
 * The runner, taken when this replay's turn comes. A replay of the same scope holding it
 * refuses this one (the admin API never queues two of one scope). Another scope's holding it,
 * or a replay of another scope queued before this one (first come, first served, so no account
 * keeps the others out by replaying again and again), makes this one wait: up to waitMs here,
 * then its trigger is published again.
 */
async function waitForTurn(deps: ReplayDeps, trigger: ReplayTrigger, key: string, createdAt: string): Promise<Turn> {
  const started = deps.clock.now().getTime();
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  for (;;) {
    const now = deps.clock.now();
    const since = new Date(now.getTime() - QUEUED_REPLAY_WAIT_MS).toISOString();
    const ahead = (await deps.replays.queued(since, 20)).some((r) => r.request.account !== trigger.request.account && reportKey(r) !== key && (r.createdAt < createdAt || (r.createdAt === createdAt && reportKey(r) < key)));
    if (!ahead) {
      const runner = await deps.replays.takeRunner(key, new Date(now.getTime() + deps.leaseMs), now, trigger.request.account);
      if (runner.ok) return { kind: 'run' };
      if (runner.held.account === trigger.request.account) return { kind: 'refused', held: runner.held };
    }
    if (now.getTime() - started >= (deps.waitMs ?? 0)) return { kind: 'wait' };
    await sleep(deps.pollMs ?? 2_000);
  }
}

class ReplayRun {
  private readonly deadline: number;
  /** The request's selection, its window closed at the replay's start (runSelection). */
  private readonly request: ReplaySelection;
  private readonly seen = new Set<string>();
  /** Deliveries this run has handled: a second copy of one is a duplicate. */
  private readonly handled = new Set<string>();
  /** Ack ids of messages to leave on the topic, released when the run ends. */
  private readonly keep: string[] = [];
  private readonly destinations = new Map<string, Promise<Destination | undefined>>();
  private selected = 0;
  private failuresInARow = 0;
  private lastFailure: string | undefined;
  private lastWrite = 0;
  /** Another run took the replay over (this one outlived its lease): stop, write nothing more. */
  private lost = false;

  constructor(
    private readonly deps: ReplayDeps,
    private report: ReplayReport,
    private readonly token: string,
    /** Where the report is kept (domain/replay/replay.ts replayKey). */
    private readonly key: string,
  ) {
    this.deadline = deps.clock.now().getTime() + deps.runMs;
    this.request = runSelection(report.request, report.startedAt ?? report.createdAt);
    this.lastWrite = deps.clock.now().getTime();
  }

  async run(): Promise<ReplayOutcome> {
    let ended: ReplayEnd;
    let error: string | undefined;
    try {
      ended = await this.readAll();
      if (ended === 'error') {
        const errorId = newErrorId();
        error = `replay stopped after ${MAX_FAILURES_IN_A_ROW} failures in a row (${STORAGE_BUSY}; error id ${errorId}): run it again later`;
        this.deps.log.error(error, { replayId: this.report.id, errorId, lastFailure: this.lastFailure });
      }
    } catch (e) {
      // Pub/Sub or the report store failed: what was replayed is PENDING; what was not stays on the topic.
      // The report is the account's to read: the fault's own words (paths, codes) go to the log, under the id the report names.
      ended = 'error';
      const errorId = newErrorId();
      error = `replay stopped by a fault of Herald's storage or queue (error id ${errorId}): run it again later`;
      this.deps.log.error(error, { replayId: this.report.id, errorId, error: (e as Error).message, stack: (e as Error).stack });
    }
    try {
      await this.deps.deadLetters.release(this.keep);
    } catch (e) {
      // They come back on their own once the hold expires: late, never lost.
      this.deps.log.warn('replay could not release the dead letters it held; they return when their hold expires', { replayId: this.report.id, error: (e as Error).message, held: this.keep.length });
    }
    const finished = finishRun(this.report, ended, this.deps.clock.now(), error);
    const written = this.lost ? undefined : await this.save(finished);
    if (!written) {
      this.deps.log.warn('replay ended after another run took it over; that run reports it', { replayId: this.report.id });
      return { kind: 'lost', report: finished };
    }
    this.log(finished);
    return { kind: 'ran', report: finished };
  }

  /** Pull, select, redeliver, ack; until the backlog is read, the limit met, the time up or too many faults. */
  private async readAll(): Promise<ReplayEnd> {
    let empty = 0;
    for (;;) {
      if (this.limitReached()) return 'limit';
      if (this.deps.clock.now().getTime() >= this.deadline) return 'time-up';
      if (this.failuresInARow >= MAX_FAILURES_IN_A_ROW) return 'error';
      if (this.lost) return 'time-up';
      const pulled = await this.deps.deadLetters.pull(this.deps.pullBatch);
      const fresh = pulled.filter((m) => !this.seen.has(m.messageId));
      // A message this run already handled came back (an ack Pub/Sub lost): leave it for the next replay.
      this.keep.push(...pulled.filter((m) => this.seen.has(m.messageId)).map((m) => m.ackId));
      if (fresh.length === 0) {
        if (++empty >= EMPTY_PULLS_TO_END) return 'drained';
        continue;
      }
      empty = 0;
      const holdSeconds = Math.ceil((this.deadline - this.deps.clock.now().getTime()) / 1000) + HOLD_MARGIN_SECONDS;
      await this.deps.deadLetters.hold(fresh.map((m) => m.ackId), holdSeconds);
      const acks: string[] = [];
      await forEachLimited(fresh, CONCURRENCY, async (m) => {
        // A bundle from the batch lane (its backstop dead-letters whole messages) is its members, each a dead letter; it goes once all are handled.
        const letters = await pulledParts(m, this.deps.journal ?? NO_JOURNAL);
        this.seen.add(m.messageId);
        let remove = true;
        for (const letter of letters) remove = (await this.handle(letter)) && remove;
        if (remove) acks.push(m.ackId);
        else this.keep.push(m.ackId);
      });
      if (acks.length > 0) await this.deps.deadLetters.ack(acks);
      await this.progress();
    }
  }

  private limitReached(): boolean {
    return this.request.limit !== undefined && this.selected >= this.request.limit;
  }

  /** Resolves whether to ack the message. */
  private async handle(m: PulledMessage): Promise<boolean> {
    this.seen.add(m.messageId);
    if (this.limitReached()) return false;
    this.report = { ...this.report, scanned: this.report.scanned + 1 };
    const letter: DeadLetter = { messageId: m.messageId, deadLetteredAt: m.publishTime, message: m.message };
    const selection = selectDeadLetter(letter, this.request);
    if (selection.kind === 'unselected') return false;
    this.selected++;
    if (selection.kind === 'not-replayable') return this.record({ ...selection.facts, outcome: 'skipped', reason: 'not-replayable', detail: selection.detail, removed: false });
    const { facts } = selection;
    if (this.handled.has(facts.deliveryId)) {
      return this.record({ ...facts, outcome: 'skipped', reason: 'duplicate', detail: 'another copy of this delivery was handled earlier in this replay', removed: !this.report.dryRun });
    }
    this.handled.add(facts.deliveryId);
    try {
      const item = await this.replay(letter, selection);
      this.failuresInARow = 0;
      return this.record(item);
    } catch (e) {
      this.failuresInARow++;
      this.lastFailure = (e as Error).message;
      const errorId = newErrorId();
      this.deps.log.warn('replay could not redeliver a dead letter; it stays on the topic', { replayId: this.report.id, errorId, deliveryId: facts.deliveryId, error: this.lastFailure });
      return this.record({ ...facts, outcome: 'failed', detail: `${STORAGE_BUSY} (error id ${errorId}); the dead letter stays on the topic`, removed: false });
    }
  }

  private record(item: ReplayItem): boolean {
    this.report = addItem(this.report, item);
    this.deps.log.debug(`replay: dead letter ${item.outcome}${item.reason ? ` (${item.reason})` : ''}`, {
      replayId: this.report.id,
      deliveryId: item.deliveryId,
      eventId: item.eventId,
      destinationId: item.destination,
      messageId: item.messageId,
      ...(item.detail ? { detail: item.detail } : {}),
    });
    return item.removed;
  }

  /** One replayable dead letter: sent again through its delivery record (or, in a dry run, judged). */
  private async replay(letter: DeadLetter, selection: Extract<Selection, { kind: 'replayable' }>): Promise<ReplayItem> {
    const { facts } = selection;
    const dry = this.report.dryRun;
    const skip = (reason: SkipReason, detail: string): ReplayItem => ({ ...facts, outcome: 'skipped', reason, detail, removed: !dry && STALE_SKIPS.has(reason) });
    const destination = await this.destination(facts.destination);
    if (!destination) return skip('destination-deleted', `destination ${facts.destination} no longer exists`);
    if (facts.eventType !== undefined && !matchesType(destination.eventTypes, facts.eventType)) {
      return skip('type-unsubscribed', `destination ${facts.destination} no longer subscribes to ${facts.eventType}`);
    }
    const suspended = destination.status === 'suspended' ? { detail: 'the destination is suspended: the retry pump QUEUES it until the destination is reactivated' } : {};
    if (dry) {
      const record = await this.deps.deliveries.get(facts.deliveryId);
      if (!record) return skip('no-record', 'no delivery record has this id');
      if (record.status !== 'DEAD') return skip('not-dead', `the delivery is ${record.status} now`);
      if (!record.event && !eventOf(letter)) return skip('not-replayable', 'neither the delivery record nor the dead letter holds a valid event');
      return { ...facts, outcome: 'would-redeliver', removed: false, ...suspended };
    }
    const now = this.deps.clock.now();
    const backfill = eventOf(letter);
    let found: DeliveryStatus | 'missing' | 'no-event' = 'missing';
    const written = await this.deps.deliveries.update(facts.deliveryId, (current) => {
      found = current?.status ?? 'missing';
      if (!current) return undefined;
      const next = replayedRecord(current, this.report.id, now);
      if (!next) return undefined;
      if (next.event) return next;
      // The record lost its copy of the event: the dead letter carries the whole event.
      if (!backfill) {
        found = 'no-event';
        return undefined;
      }
      return { ...next, event: backfill } satisfies DeliveryRecord;
    });
    if (written) this.deps.metrics?.add('replayed', 1);
    if (written) return { ...facts, outcome: 'redelivered', removed: true, ...suspended };
    const status = found as DeliveryStatus | 'missing' | 'no-event';
    if (status === 'missing') return skip('no-record', 'no delivery record has this id');
    if (status === 'no-event') return skip('not-replayable', 'neither the delivery record nor the dead letter holds a valid event');
    return skip('not-dead', `the delivery is ${status} now`);
  }

  private destination(id: string): Promise<Destination | undefined> {
    let found = this.destinations.get(id);
    if (!found) {
      found = this.deps.destinations.get(id);
      this.destinations.set(id, found);
    }
    return found;
  }

  /** Writes the report's progress, at most every progressEveryMs. */
  private async progress(): Promise<void> {
    const now = this.deps.clock.now().getTime();
    if (now - this.lastWrite < this.deps.progressEveryMs) return;
    this.lastWrite = now;
    const written = await this.save({ ...this.report, updatedAt: new Date(now).toISOString() });
    if (!written) this.lost = true;
    this.deps.log.debug('replay progress', { replayId: this.report.id, ...counts(this.report) });
  }

  /** Only while this run still owns the replay (its token is the report's). */
  private save(report: ReplayReport): Promise<ReplayReport | undefined> {
    return this.deps.replays.update(this.key, (current) => (current?.runToken === this.token ? report : undefined));
  }

  private log(report: ReplayReport): void {
    const fields = { replayId: report.id, status: report.status, ended: report.ended, request: report.request, dryRun: report.dryRun, ...counts(report), skippedBy: report.skippedBy, startedAt: report.startedAt, endedAt: report.endedAt, runs: report.runs };
    const message = `replay ${report.status}${report.dryRun ? ' (dry run)' : ''}: ${report.matched} matched, ${report.dryRun ? `${report.wouldRedeliver} would be redelivered` : `${report.redelivered} redelivered`}, ${report.skipped} skipped, ${report.failed} failed`;
    if (report.status === 'failed') this.deps.log.error(`${message}: ${report.error ?? ''}`, fields);
    else if (report.status === 'incomplete') this.deps.log.warn(`${message}; time ran out: run the same request again to continue`, fields);
    else this.deps.log.info(message, fields);
  }
}

function counts(r: ReplayReport) {
  return { scanned: r.scanned, matched: r.matched, redelivered: r.redelivered, wouldRedeliver: r.wouldRedeliver, skipped: r.skipped, failed: r.failed };
}

/** The event a dead letter carries (CloudEvents Pub/Sub binding), if it parses. */
function eventOf(letter: DeadLetter): HeraldEvent | undefined {
  const parsed = fromPubSubMessage(letter.message, letter.deadLetteredAt);
  return parsed.ok ? parsed.value : undefined;
}
