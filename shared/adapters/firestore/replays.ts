import { DocumentData } from '@google-cloud/firestore';
import { ReplayReport, reportKey, RunnerLock, takeRunner } from '../../domain/replay/replay';
import { ReplayStore } from '../../ports/replay';
import { FirestoreStore } from './stores';
import { COLLECTIONS, FIRESTORE_QUERIES } from '../../firestore-schema';
import { createIfAbsent, transactOne } from './write';

/**
 * Replay reports in Firestore: `replays/{key}` (domain/replay/replay.ts replayKey: `<account>:<id>`, or
 * the id of an unscoped replay and of every report from before ids were per account), one
 * document per replay, rewritten as it progresses.
 */
export class FirestoreReplayStore extends FirestoreStore implements ReplayStore {
  private readonly col = this.db.collection(COLLECTIONS.replays);

  get(key: string): Promise<ReplayReport | undefined> {
    return this.readOne<ReplayReport>(this.col.doc(key));
  }

  async create(report: ReplayReport): Promise<boolean> {
    if (!(await createIfAbsent(() => this.col.doc(reportKey(report)).create(report as DocumentData)))) return false;
    this.ops.writes++;
    return true;
  }

  async update(key: string, decide: (current: ReplayReport | undefined) => ReplayReport | undefined): Promise<ReplayReport | undefined> {
    const { result: written, reads } = await transactOne(this.db, this.col.doc(key), (data) => {
      const next = decide(data as ReplayReport | undefined);
      return { result: next, write: next && { set: next as DocumentData } };
    });
    this.ops.reads += reads;
    if (written !== undefined) this.ops.writes++;
    return written;
  }

  async recent(limit: number, account?: string): Promise<ReplayReport[]> {
    const q = account === undefined ? FIRESTORE_QUERIES.recentReplays : FIRESTORE_QUERIES.accountReplays;
    const scoped = account === undefined ? this.col : this.col.where(FIRESTORE_QUERIES.accountReplays.equality[0], '==', account);
    const snap = await scoped.orderBy(q.orderBy, q.direction).limit(limit).get();
    this.ops.reads += Math.max(1, snap.size);
    return snap.docs.map((d) => d.data() as ReplayReport);
  }

  private get runner() {
    return this.db.collection(COLLECTIONS.locks).doc('replay-runner');
  }

  async takeRunner(id: string, until: Date, now: Date, account?: string): Promise<{ ok: true } | { ok: false; held: RunnerLock }> {
    const { result } = await transactOne(this.db, this.runner, (data) => {
      const taken = takeRunner(data as RunnerLock | undefined, id, until, now, account);
      return { result: taken, write: taken.ok ? { set: taken.lock } : undefined };
    });
    this.ops.reads++;
    if (!result.ok) return result;
    this.ops.writes++;
    return { ok: true };
  }

  async releaseRunner(id: string): Promise<void> {
    await transactOne(this.db, this.runner, (data) => ({ result: undefined, write: (data as RunnerLock | undefined)?.holder === id ? { delete: true } : undefined }));
    this.ops.reads++;
  }

  running(limit: number): Promise<ReplayReport[]> {
    return this.withStatus('running', undefined, limit);
  }

  queued(since: string, limit: number): Promise<ReplayReport[]> {
    return this.withStatus('queued', since, limit);
  }

  async named(id: string, limit: number): Promise<ReplayReport[]> {
    const snap = await this.col.where('id', '==', id).limit(limit).get();
    this.ops.reads += Math.max(1, snap.size);
    return snap.docs.map((d) => d.data() as ReplayReport);
  }

  /** One status, oldest first: the runningReplays index (status, createdAt) serves it, `since` too. */
  private async withStatus(status: 'running' | 'queued', since: string | undefined, limit: number): Promise<ReplayReport[]> {
    const q = FIRESTORE_QUERIES.runningReplays;
    const one = this.col.where(q.equality[0], '==', status);
    const snap = await (since === undefined ? one : one.where(q.orderBy, '>=', since)).orderBy(q.orderBy).limit(limit).get();
    this.ops.reads += Math.max(1, snap.size);
    return snap.docs.map((d) => d.data() as ReplayReport);
  }
}
