/**
 * Herald's own health, as the console's Overview panel shows it (GET /admin/overview): read from
 * the process's own metrics in local mode, from Cloud Monitoring when deployed, or from nowhere
 * when telemetry is off. Only shared/adapters/ implements this.
 */

/** Where the numbers came from. */
export type HealthSource = 'process' | 'cloud-monitoring' | 'none';

/** One reading over a window; a number is null where the source has nothing for it (no traffic, or no data yet). */
export interface HealthReading {
  source: HealthSource;
  acceptedPerSecond: number | null;
  deliveredPerSecond: number | null;
  endToEndP99Ms: number | null;
  /** Deliveries sent to the dead-letter topic in the window. */
  deadLettered: number | null;
  /** How old the oldest message waiting on a lane is (s). */
  lanesOldestBacklogSeconds: number | null;
  /** What the lanes' number is, in words (it is not the same thing in local mode and on GCP). */
  lanesBacklogBasis?: string;
  /** Counts behind the rates, where the source has them (in-process). */
  counts?: { accepted: number; delivered: number };
  /** The span the rates are over (s): shorter than the window while the process is younger. */
  coveredSeconds?: number;
  /** Why there are no numbers (source `none`), and how to have them. */
  reason?: string;
}

export interface HealthReader {
  /** The window of `windowMs` up to `now`. May throw when its source cannot be reached. */
  read(windowMs: number, now: Date): Promise<HealthReading>;
}
