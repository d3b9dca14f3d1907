import type { LastError } from './delivery';
import type { SuspendCause } from './retry-decision';

/**
 * What a suspension leaves on its destination, as types alone: destination.ts holds it and
 * suspension.ts makes it, and neither needs the other for its shape.
 */

/** `manual`: an operator (or the account) suspended it by hand (POST /admin/destinations/{id}/suspend). */
export type SuspensionCause = SuspendCause | 'threshold' | 'manual';

export interface Suspension {
  cause: SuspensionCause;
  reason: string;
  at: string;
  /** Who suspended it by hand (cause `manual`), as the audit log names the caller: `admin`, `key:<id>` or `portal:<session>`. */
  by?: string;
  /** The failure that suspended it (absent for a threshold suspension: see recentErrors). */
  lastError?: LastError;
  /** The rolling hour when it was suspended. */
  attempts1h: number;
  successRate1h?: number;
  recentErrors: LastError[];
  /** The notification published for it (also what local mode shows instead of an email). */
  notification: SuspensionNotification;
}

export interface SuspensionNotification {
  type: 'herald.destination.suspended';
  destinationId: string;
  /** The destination's technicalEmail; absent when it has none (the message is still published and logged). */
  to?: string;
  subject: string;
  text: string;
  reason: string;
  cause: SuspensionCause;
  /** Who suspended it by hand (cause `manual`). */
  by?: string;
  suspendedAt: string;
  attempts1h: number;
  successRate1h?: number;
  recentErrors: LastError[];
  reactivate: { api: string; cli: string };
}


/**
 * The early warning a destination keeps beside its suspension state (domain/operational/failing-level.ts):
 * the highest fraction of its threshold's failure rate announced (`herald.destination.failing`),
 * until it falls back below every fraction, is suspended or reactivated.
 */
export interface FailingState {
  fraction: number;
  /** When it was crossed (ISO). */
  at: string;
  failureRate: number;
}
