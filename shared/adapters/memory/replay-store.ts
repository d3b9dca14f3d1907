import { ReplayReport, reportKey, RunnerLock, takeRunner } from '../../domain/replay/replay';
import { ReplayStore } from '../../ports/replay';

/** Replay reports in memory, for unit tests of the use cases. */
export class MemoryReplayStore implements ReplayStore {
  private readonly reports = new Map<string, ReplayReport>();
  /** Every write, in order (tests check progress was recorded). */
  readonly writes: ReplayReport[] = [];

  async get(key: string): Promise<ReplayReport | undefined> {
    const r = this.reports.get(key);
    return r && structuredClone(r);
  }

  async create(report: ReplayReport): Promise<boolean> {
    if (this.reports.has(reportKey(report))) return false;
    this.write(report);
    return true;
  }

  async update(key: string, decide: (current: ReplayReport | undefined) => ReplayReport | undefined): Promise<ReplayReport | undefined> {
    const next = decide(await this.get(key));
    if (next !== undefined) this.write(next, key);
    return next && structuredClone(next);
  }

  async recent(limit: number, account?: string): Promise<ReplayReport[]> {
    return [...this.reports.values()].filter((r) => account === undefined || r.request.account === account).sort((a, b) => b.createdAt.localeCompare(a.createdAt)).slice(0, limit).map((r) => structuredClone(r));
  }

  async running(limit: number): Promise<ReplayReport[]> {
    return [...this.reports.values()].filter((r) => r.status === 'running').sort((a, b) => a.createdAt.localeCompare(b.createdAt)).slice(0, limit).map((r) => structuredClone(r));
  }

  async queued(since: string, limit: number): Promise<ReplayReport[]> {
    return [...this.reports.values()].filter((r) => r.status === 'queued' && r.createdAt >= since).sort((a, b) => a.createdAt.localeCompare(b.createdAt)).slice(0, limit).map((r) => structuredClone(r));
  }

  async named(id: string, limit: number): Promise<ReplayReport[]> {
    return [...this.reports.values()].filter((r) => r.id === id).slice(0, limit).map((r) => structuredClone(r));
  }

  lock: RunnerLock | undefined;

  async takeRunner(id: string, until: Date, now: Date, account?: string): Promise<{ ok: true } | { ok: false; held: RunnerLock }> {
    const taken = takeRunner(this.lock, id, until, now, account);
    if (!taken.ok) return taken;
    this.lock = taken.lock;
    return { ok: true };
  }

  async releaseRunner(id: string): Promise<void> {
    if (this.lock?.holder === id) this.lock = undefined;
  }

  private write(report: ReplayReport, key = reportKey(report)): void {
    this.reports.set(key, structuredClone(report));
    this.writes.push(structuredClone(report));
  }
}
