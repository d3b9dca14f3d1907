import { z } from 'zod';
import type { HttpHeaders } from '../events/cloudevents-http';
import type { ValidationIssue } from '../events/event';

/**
 * A producer resending events whose first try went unanswered (a connection reset, a timeout)
 * or was refused with a 503 may say so: `Herald-Resend: 1`. The first try may have reached the
 * destinations' lanes before its answer was lost, and a first attempt sends without reading
 * its record (docs/delivery-guarantees.md); a resent event's first attempts read it first, one
 * read per destination, and one that finds the delivery recorded does not send it again.
 */
export const RESEND_HEADER = 'herald-resend';

const resendSchema = z.enum(['1', 'true'], { error: `${RESEND_HEADER} must be 1 or true (the request resends events whose earlier try went unanswered), or absent` });

export type ResendRead = { ok: true; resent: boolean } | { ok: false; issues: ValidationIssue[] };

/** Whether the request says it resends its events; a header with another value is an error, not ignored. */
export function resendOf(headers: HttpHeaders): ResendRead {
  const value = headers[RESEND_HEADER];
  if (value === undefined) return { ok: true, resent: false };
  const parsed = resendSchema.safeParse(Array.isArray(value) ? value.join(',') : value.trim().toLowerCase());
  if (!parsed.success) return { ok: false, issues: [{ path: `headers.${RESEND_HEADER}`, message: parsed.error.issues[0]!.message }] };
  return { ok: true, resent: true };
}
