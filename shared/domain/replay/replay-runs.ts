import { REPLAY_LIMITS, ReplayEnd, ReplayItem, ReplayReport, ReplayRequest, ReplayStatus, RunnerLock, rejectedReport, selectionOf, ZERO } from './replay';

/**
 * A replay run's life in its report: whether a trigger runs the replay (or is refused while
 * another runs, or is a duplicate), each dead letter counted, and how the run ended.
 */

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
