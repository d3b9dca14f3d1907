import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { issuesFromZod, ValidationIssue } from '../../domain/events/event';
import { parseReplayRequest, queuedReport, REPLAY_ID, replayTriggerMessage, reportKey, ReplaySummary, replaySummaryOf, ReplayView, replayViewOf } from '../../domain/replay/replay';
import { findReplay, replaysUnderWay } from '../retry/replay-reports';
import { Clock, Logger } from '../../ports/clock';
import { MessageBus } from '../../ports/messaging';
import { ReplayStore } from '../../ports/replay';
import { Outcome } from '../support/outcome';
import { newErrorId, QUEUE_REFUSED } from '../support/unavailable-causes';

/**
 * The operators' side of replay: `POST /admin/replays` validates a request, records it
 * (queued) and publishes it on the replay topic, where the `replay` function runs it;
 * `GET /admin/replays/{id}` and `GET /admin/replays` show the reports.
 */

export interface ReplaysAdminDeps {
  replays: ReplayStore;
  bus: MessageBus;
  replayTopic: string;
  clock: Clock;
  log: Logger;
}

export const REPLAY_LIST = { defaultLimit: 20, maxLimit: 100 } as const;

/** Sortable by time, unique by its random tail: replay-20261123-141500-k3x9qa. */
export function newReplayId(now: Date): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  return `replay-${stamp}-${randomBytes(6).toString('base64url').toLowerCase().replace(/[^a-z0-9]/g, '0').slice(0, 6)}`;
}

export type ReplayAccepted = { id: string; status: 'queued'; dryRun: boolean; request: ReplayView['request']; report: string };

/**
 * `account`: the replay is scoped to it (an account key, or a path under /accounts/{id}): only
 * its destinations' dead letters are selected. Undefined: the operator, every account's.
 */
export async function postReplay(deps: ReplaysAdminDeps, body: unknown, account?: string): Promise<Outcome<ReplayAccepted>> {
  const parsed = parseReplayRequest(body);
  if (!parsed.ok) return { kind: 'invalid', body: { error: 'invalid replay request', issues: parsed.issues } };
  if (account !== undefined && parsed.value.account !== undefined && parsed.value.account !== account) {
    return { kind: 'invalid', body: { error: 'invalid replay request', issues: [{ path: 'account', message: `this replay is for account ${JSON.stringify(account)}, as its path or key says: leave account out` }] } };
  }
  const request = account !== undefined ? { ...parsed.value, account } : parsed.value;
  const now = deps.clock.now();
  const id = request.id ?? newReplayId(now);
  const report = queuedReport(id, request, now);
  const used = (): Outcome<never> => ({ kind: 'conflict', body: { error: `replay id ${JSON.stringify(id)} is already used; see GET ${replayPath(request.account, id)}`, issues: [{ path: 'id', message: 'already used' }] } });
  // An account's id is its own: taken only by its own replay (one kept under the bare id before ids were per account too).
  if (request.id !== undefined && (await findReplay(deps.replays, request.account, id))) return used();
  // One replay per account (or of the operator's across accounts) at a time; another account's
  // does not refuse this one: replays take turns at reading the dead-letter topic (app/retry/replay-run.ts).
  const own = (await replaysUnderWay(deps.replays, now)).find((r) => r.request.account === request.account);
  if (own) {
    const since = own.status === 'running' ? `is running (since ${own.startedAt ?? own.createdAt})` : `is queued (since ${own.createdAt}), waiting for its turn`;
    return { kind: 'conflict', body: { error: `replay ${own.id} ${since}; wait for it to end (GET ${replayPath(request.account, own.id)}): ${request.account === undefined ? 'the operator runs one replay across accounts' : 'an account runs one replay'} at a time` } };
  }
  if (!(await deps.replays.create(report))) return used();
  try {
    const messageId = await deps.bus.publish(deps.replayTopic, replayTriggerMessage(request, id));
    deps.log.info('replay requested', { replayId: id, messageId, request: report.request, dryRun: report.dryRun });
  } catch (e) {
    // The topic's path and Pub/Sub's words go to the log only: the report and the answer say what happened and carry the id that finds them.
    const errorId = newErrorId();
    const error = `the replay request could not be queued (${QUEUE_REFUSED}; error id ${errorId})`;
    await deps.replays.update(reportKey(report), (current) => current && current.status === 'queued' ? { ...current, status: 'failed', error, endedAt: deps.clock.now().toISOString(), updatedAt: deps.clock.now().toISOString() } : undefined);
    deps.log.error(`the replay request could not be published on ${deps.replayTopic}`, { replayId: id, errorId, error: (e as Error).message });
    return { kind: 'unavailable', body: { error: `${error}; nothing was replayed: try again`, errorId } };
  }
  return { kind: 'accepted', body: { id, status: 'queued', dryRun: report.dryRun, request: report.request, report: replayPath(account, id) } };
}

const badReplayId = (id: string): Outcome<never> => ({
  kind: 'invalid',
  body: { error: `invalid replay id ${JSON.stringify(id)}`, issues: [{ path: 'id', message: 'a replay id is 1-64 letters, digits, "_" or "-", as POST /admin/replays returned it' }] },
});

/** Where a replay's report is, for whoever asked for it. */
function replayPath(account: string | undefined, id: string): string {
  return account === undefined ? `/admin/replays/${id}` : `/admin/accounts/${account}/replays/${id}`;
}

/** Not found: a replay that does not exist, or that the caller may not see. */
export const noReplay = (id: string): Outcome<never> => ({ kind: 'not-found', body: { error: `no replay ${JSON.stringify(id)}; list them with GET /admin/replays` } });

/**
 * With `account`, that account's replay `id`: another account's (or the operator's unscoped
 * one) is not there (not found), even under the same id. Without (the operator): the unscoped
 * one, else the one account replay of that id (several: a conflict naming where each is).
 */
export async function getReplay(deps: Pick<ReplaysAdminDeps, 'replays'>, id: string, account?: string): Promise<Outcome<ReplayView>> {
  if (!REPLAY_ID.test(id)) return badReplayId(id);
  let report = (await findReplay(deps.replays, account, id))?.report;
  if (!report && account === undefined) {
    const named = await deps.replays.named(id, 10);
    if (named.length > 1) {
      const paths = named.map((r) => `GET ${replayPath(r.request.account, id)}`).join(', ');
      return { kind: 'conflict', body: { error: `several accounts have a replay ${JSON.stringify(id)}: ask for one by its account (${paths})` } };
    }
    report = named[0];
  }
  if (!report) return noReplay(id);
  return { kind: 'ok', body: replayViewOf(report) };
}

const LIMIT_MESSAGE = `limit must be a whole number from 1 to ${REPLAY_LIST.maxLimit} (default ${REPLAY_LIST.defaultLimit})`;

export const replayListQuerySchema = z.object({
  limit: z
    .string({ error: `${LIMIT_MESSAGE}, given once` })
    .regex(/^\s*\d{1,6}\s*$/, LIMIT_MESSAGE)
    .transform(Number)
    .pipe(z.number().int().min(1, LIMIT_MESSAGE).max(REPLAY_LIST.maxLimit, LIMIT_MESSAGE))
    .default(REPLAY_LIST.defaultLimit),
});

/** The query string of GET /admin/replays: every problem at once, unknown parameters by name. */
export function parseReplayListQuery(query: Record<string, unknown>): { ok: true; limit: number } | { ok: false; issues: ValidationIssue[] } {
  const unknown = Object.keys(query)
    .filter((k) => k !== 'limit')
    .map((k) => ({ path: k, message: 'unknown query parameter; use limit' }));
  const parsed = replayListQuerySchema.safeParse(query);
  const issues = [...unknown, ...(parsed.success ? [] : issuesFromZod(parsed.error))];
  if (issues.length > 0 || !parsed.success) return { ok: false, issues };
  return { ok: true, limit: parsed.data.limit };
}

export async function listReplays(deps: Pick<ReplaysAdminDeps, 'replays'>, query: Record<string, unknown>, account?: string): Promise<Outcome<{ replays: ReplaySummary[] }>> {
  const parsed = parseReplayListQuery(query);
  if (!parsed.ok) return { kind: 'invalid', body: { error: 'invalid replays query', issues: parsed.issues } };
  const reports = await deps.replays.recent(parsed.limit, account);
  return { kind: 'ok', body: { replays: reports.map(replaySummaryOf) } };
}
