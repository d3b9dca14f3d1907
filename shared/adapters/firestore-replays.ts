import { DocumentData, Firestore } from '@google-cloud/firestore';
import { ReplayReport, RunnerLock, takeRunner } from '../domain/replay';
import { ReplayStore } from '../ports';
import { COLLECTIONS, FIRESTORE_QUERIES, OperationCounter } from './firestore-stores';
import { GRPC, grpcCode } from './firestore-write';

/** Replay reports in Firestore: `replays/{id}`, one document per replay, rewritten as it progresses. */
export class FirestoreReplayStore implements ReplayStore {
  constructor(
    private readonly db: Firestore,
    private readonly ops = new OperationCounter(),
  ) {}

  private get col() {
    return this.db.collection(COLLECTIONS.replays);
  }

  async get(id: string): Promise<ReplayReport | undefined> {
    const snap = await this.col.doc(id).get();
    this.ops.reads++;
    return snap.exists ? (snap.data() as ReplayReport) : undefined;
  }

  async create(report: ReplayReport): Promise<boolean> {
    try {
      await this.col.doc(report.id).create(report as DocumentData);
    } catch (e) {
      if (grpcCode(e) === GRPC.ALREADY_EXISTS) return false;
      throw e;
    }
    this.ops.writes++;
    return true;
  }

  async update(id: string, decide: (current: ReplayReport | undefined) => ReplayReport | undefined): Promise<ReplayReport | undefined> {
    const ref = this.col.doc(id);
    let reads = 0;
    const written = await this.db.runTransaction(async (tx) => {
      const snap = await tx.get(ref);
      reads++;
      const next = decide(snap.exists ? (snap.data() as ReplayReport) : undefined);
      if (next !== undefined) tx.set(ref, next as DocumentData);
      return next;
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

  async takeRunner(id: string, until: Date, now: Date): Promise<{ ok: true } | { ok: false; held: RunnerLock }> {
    const result = await this.db.runTransaction(async (tx) => {
      const snap = await tx.get(this.runner);
      const taken = takeRunner(snap.exists ? (snap.data() as RunnerLock) : undefined, id, until, now);
      if (taken.ok) tx.set(this.runner, taken.lock);
      return taken;
    });
    this.ops.reads++;
    if (!result.ok) return result;
    this.ops.writes++;
    return { ok: true };
  }

  async releaseRunner(id: string): Promise<void> {
    await this.db.runTransaction(async (tx) => {
      const snap = await tx.get(this.runner);
      if (snap.exists && (snap.data() as RunnerLock).holder === id) tx.delete(this.runner);
    });
    this.ops.reads++;
  }

  async running(limit: number): Promise<ReplayReport[]> {
    const q = FIRESTORE_QUERIES.runningReplays;
    const snap = await this.col.where(q.equality[0], '==', 'running').orderBy(q.orderBy).limit(limit).get();
    this.ops.reads += Math.max(1, snap.size);
    return snap.docs.map((d) => d.data() as ReplayReport);
  }
}
