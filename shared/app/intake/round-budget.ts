/**
 * What a round may still do: a run starts only before the deadline (Date.now(), epoch ms) and
 * while fewer than `records` are taken. A run takes its records as it starts (before its first
 * await, so batches worked side by side cannot all pass the check at once) and gives back those
 * it finds: a round creates at most one run more than `records`. No create starts past the
 * deadline either: a run cut short keeps its progress up to the first event whose record was
 * not attempted, and the round ends within a create's time of its deadline — or of its first
 * run, which always goes whole (a round always moves the recovery on).
 */
export class RoundBudget {
  private taken = 0;
  private runs = 0;

  constructor(
    private readonly deadline: number,
    private readonly records: number,
  ) {}

  /**
   * Whether a run may start (counted when it does). A round's first run always may: a round whose
   * reads alone outlast its budget (an overloaded process) still moves the recovery on.
   */
  startRun(): { first: boolean } | undefined {
    if (this.runs > 0 && !(this.inTime() && this.taken < this.records)) return undefined;
    return { first: this.runs++ === 0 };
  }

  /** Whether any run may still start (without starting one). */
  open(): boolean {
    return this.runs === 0 || (this.inTime() && this.taken < this.records);
  }

  inTime(): boolean {
    return Date.now() < this.deadline;
  }

  msLeft(): number {
    return Math.max(0, this.deadline - Date.now());
  }

  take(records: number): void {
    this.taken += records;
  }

  giveBack(records: number): void {
    this.taken -= records;
  }
}
