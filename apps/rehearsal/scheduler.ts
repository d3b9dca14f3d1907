import { ScheduleSpec } from '../../shared/topology';

/** Cron schedules Cloud Scheduler would run that this stand-in can: every N minutes. */
const EVERY_N_MINUTES = /^(\*|\*\/(\d+)) \* \* \* \*$/;

export function periodMsOf(cron: string, timeScale: number): number {
  const m = EVERY_N_MINUTES.exec(cron.trim());
  if (!m) throw new Error(`the rehearsal's scheduler runs '* * * * *' and '*/N * * * *' only, not '${cron}'`);
  return Math.max(100, Math.round((60_000 * Number(m[2] ?? 1)) / timeScale));
}

export interface SchedulerOptions {
  schedules: readonly ScheduleSpec[];
  /** The URL Cloud Scheduler would call: the function's, with the caller identity local mode accepts. */
  urlOf: (schedule: ScheduleSpec) => URL;
  /** HERALD_TIME_SCALE: a minute lasts 60 s / scale, as local mode's loops scale theirs. */
  timeScale: number;
  note: (line: string) => void;
}

/**
 * Cloud Scheduler's part: each schedule of the topology POSTed to its function through the
 * proxy, on its cron (scaled). A run still going when the next tick comes is left to finish
 * and that tick skipped, where Cloud Scheduler would start another (the pump's claims make two
 * runs safe; one at a time keeps a scaled minute from piling runs up).
 */
export class SchedulerStandIn {
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly running = new Map<string, Promise<void>>();
  private readonly aborts = new AbortController();
  /** Calls made and answered 2xx, per schedule: the check reads them. */
  readonly calls = new Map<string, { ok: number; failed: number }>();

  constructor(private readonly options: SchedulerOptions) {}

  start(): void {
    for (const schedule of this.options.schedules) {
      this.calls.set(schedule.name, { ok: 0, failed: 0 });
      const period = periodMsOf(schedule.cron, this.options.timeScale);
      this.timers.push(setInterval(() => this.tick(schedule), period));
    }
  }

  /** The query Cloud Scheduler's job sends (infra/components/scheduler.ts): runSeconds scaled with the minute. */
  static runSecondsOf(schedule: ScheduleSpec, timeScale: number): number | undefined {
    return schedule.runSeconds === undefined ? undefined : Math.max(1, Math.round(schedule.runSeconds / timeScale));
  }

  private tick(schedule: ScheduleSpec): void {
    if (this.running.has(schedule.name)) return;
    const url = this.options.urlOf(schedule);
    const run = fetch(url, { method: 'POST', signal: this.aborts.signal })
      .then(async (res) => {
        await res.arrayBuffer();
        const count = this.calls.get(schedule.name)!;
        if (res.ok) count.ok++;
        else {
          count.failed++;
          this.options.note(`scheduler: ${schedule.name} → ${schedule.function} answered ${res.status}`);
        }
      })
      .catch((e: unknown) => {
        if (!this.aborts.signal.aborted) this.options.note(`scheduler: ${schedule.name} → ${schedule.function} failed: ${(e as Error).message}`);
      })
      .finally(() => this.running.delete(schedule.name));
    this.running.set(schedule.name, run);
  }

  /** No new calls; the runs under way get `graceMs` to be answered (the functions stop them as they stop), then are dropped. */
  async stop(graceMs: number): Promise<void> {
    for (const timer of this.timers) clearInterval(timer);
    const timer = setTimeout(() => this.aborts.abort(), graceMs);
    await Promise.all(this.running.values());
    clearTimeout(timer);
  }
}
