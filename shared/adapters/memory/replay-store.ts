import { ReplayReport, RunnerLock, takeRunner } from '../../domain/replay';
import { ReplayStore } from '../../ports';

/** Replay reports in memory, for unit tests of the use cases. */
export class MemoryReplayStore implements ReplayStore {
  private readonly reports = new Map<string, ReplayReport>();
  /** Every write, in order (tests check progress was recorded). */
  readonly writes: ReplayReport[] = [];

  async get(id: string): Promise<ReplayReport | undefined> {
    const r = this.reports.get(id);
    return r && structuredClone(r);
  }

  async create(report: ReplayReport): Promise<boolean> {
    if (this.reports.has(report.id)) return false;
    this.write(report);
    return true;
  }

  async update(id: string, decide: (current: ReplayReport | undefined) => ReplayReport | undefined): Promise<ReplayReport | undefined> {
    const next = decide(await this.get(id));
    if (next !== undefined) this.write(next);
    return next && structuredClone(next);
  }

  async recent(limit: number, account?: string): Promise<ReplayReport[]> {
    return [...this.reports.values()].filter((r) => account === undefined || r.request.account === account).sort((a, b) => b.createdAt.localeCompare(a.createdAt)).slice(0, limit).map((r) => structuredClone(r));
  }

  async running(limit: number): Promise<ReplayReport[]> {
    return [...this.reports.values()].filter((r) => r.status === 'running').sort((a, b) => a.createdAt.localeCompare(b.createdAt)).slice(0, limit).map((r) => structuredClone(r));
  }

  lock: RunnerLock | undefined;

  async takeRunner(id: string, until: Date, now: Date): Promise<{ ok: true } | { ok: false; held: RunnerLock }> {
    const taken = takeRunner(this.lock, id, until, now);
    if (!taken.ok) return taken;
    this.lock = taken.lock;
    return { ok: true };
  }

  async releaseRunner(id: string): Promise<void> {
    if (this.lock?.holder === id) this.lock = undefined;
  }

  private write(report: ReplayReport): void {
    this.reports.set(report.id, structuredClone(report));
    this.writes.push(structuredClone(report));
  }
}
