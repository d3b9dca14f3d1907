/**
 * The rate limit on operational events, per subject (a destination or an account) and kind: at
 * most one each `intervalMs`, the ones between counted and reported with the next (`suppressed`).
 * A destination whose every event dies thus announces one death an interval, not thousands.
 * Kept per instance, in memory: a limit, not a guarantee of exactly one.
 */
export class NoticeLimit {
  private readonly last = new Map<string, { at: number; suppressed: number }>();

  constructor(
    private readonly intervalMs: number,
    /** Subjects remembered at most; past it, those whose interval has ended are forgotten. */
    private readonly maxSubjects = 10_000,
  ) {}

  /** Whether a notice for `key` may go at `nowMs`; if so, how many were held back since the last. */
  take(key: string, nowMs: number): { ok: true; suppressed: number } | { ok: false } {
    const seen = this.last.get(key);
    if (seen && nowMs - seen.at < this.intervalMs) {
      seen.suppressed++;
      return { ok: false };
    }
    if (!seen && this.last.size >= this.maxSubjects) this.forgetEnded(nowMs);
    this.last.set(key, { at: nowMs, suppressed: 0 });
    return { ok: true, suppressed: seen?.suppressed ?? 0 };
  }

  private forgetEnded(nowMs: number): void {
    for (const [key, seen] of this.last) if (nowMs - seen.at >= this.intervalMs) this.last.delete(key);
  }
}
