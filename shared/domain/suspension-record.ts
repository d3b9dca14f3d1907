import type { LastError } from './delivery';
import type { SuspendCause } from './retry-decision';

/**
 * What a suspension leaves on its destination, as types alone: destination.ts holds it and
 * suspension.ts makes it, and neither needs the other for its shape.
 */

export type SuspensionCause = SuspendCause | 'threshold';

export interface Suspension {
  cause: SuspensionCause;
  reason: string;
  at: string;
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
  suspendedAt: string;
  attempts1h: number;
  successRate1h?: number;
  recentErrors: LastError[];
  reactivate: { api: string; cli: string };
}

