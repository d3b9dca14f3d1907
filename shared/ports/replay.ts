import { ReplayReport, RunnerLock } from '../domain/replay/replay';

/** Replay requests and their reports. Only shared/adapters/ implements these with SDKs and sockets. */

/** Replay reports, each under its key (domain/replay/replay.ts replayKey: `<account>:<id>`, or the id of an unscoped one). */
export interface ReplayStore {
  get(key: string): Promise<ReplayReport | undefined>;
  /** Writes the report under reportKey(report) only if none is there; resolves false (writing nothing) if one is. */
  create(report: ReplayReport): Promise<boolean>;
  /** As DeliveryStore.update: `decide` may run more than once and must be pure. */
  update(key: string, decide: (current: ReplayReport | undefined) => ReplayReport | undefined): Promise<ReplayReport | undefined>;
  /** Newest first (by createdAt); with `account`, only the replays scoped to it (`request.account`). */
  recent(limit: number, account?: string): Promise<ReplayReport[]>;
  /** Reports whose status is running, oldest first. */
  running(limit: number): Promise<ReplayReport[]>;
  /** Reports whose status is queued, created at or after `since`, oldest first: the replays waiting for their turn. */
  queued(since: string, limit: number): Promise<ReplayReport[]>;
  /** Reports whose id is `id`, in any account (the operator's look-up by id alone). */
  named(id: string, limit: number): Promise<ReplayReport[]>;
  /** Atomically takes the one replay runner for the replay at `key` until `until` (domain/replay/replay.ts takeRunner). */
  takeRunner(key: string, until: Date, now: Date, account?: string): Promise<{ ok: true } | { ok: false; held: RunnerLock }>;
  /** Frees the runner if `key` holds it. */
  releaseRunner(key: string): Promise<void>;
}
