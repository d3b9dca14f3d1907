import { replayKey, ReplayReport } from '../../domain/replay/replay';
import { ReplayStore } from '../../ports/replay';

/**
 * How long a queued replay counts as waiting for its turn. Past it (its trigger lost, say) it
 * no longer holds back the replays queued after it, nor its account's next one.
 */
export const QUEUED_REPLAY_WAIT_MS = 3_600_000;

/**
 * Replay `id` of `account` (undefined: the operator's unscoped ones) and where it is kept: under
 * its key, or, for an account, where a report from before ids were per account is (the bare
 * id), when that one is the account's.
 */
export async function findReplay(store: Pick<ReplayStore, 'get'>, account: string | undefined, id: string): Promise<{ key: string; report: ReplayReport } | undefined> {
  const key = replayKey(account, id);
  const report = await store.get(key);
  if (report) return { key, report };
  if (account === undefined) return undefined;
  const earlier = await store.get(id);
  return earlier?.request.account === account ? { key: id, report: earlier } : undefined;
}

/** The replays waiting for their turn or running now, oldest first. */
export async function replaysUnderWay(store: Pick<ReplayStore, 'running' | 'queued'>, now: Date): Promise<ReplayReport[]> {
  const [running, queued] = await Promise.all([store.running(10), store.queued(new Date(now.getTime() - QUEUED_REPLAY_WAIT_MS).toISOString(), 20)]);
  return [...running.filter((r) => r.runningUntil !== undefined && r.runningUntil > now.toISOString()), ...queued];
}
