import { eventAccount } from '../../domain/access/account';
import { HeraldEvent } from '../../domain/events/event';
import { DEFAULT_ACCOUNT } from '../../domain/ids';
import { UsageCounts } from '../../domain/usage/usage';

/** Where usage is counted (app/destinations/counter-writer.ts meter): flushed with the counters. */
export interface UsageMeter {
  meter(account: string, at: Date, counts: Partial<UsageCounts>): void;
  /**
   * The deployment's prefix of Herald's operational event types (HERALD_OPERATIONAL_EVENT_PREFIX,
   * the one the operational events are published with): accepted events whose type starts with
   * it are counted apart as `operationalEvents`.
   */
  readonly operationalEventPrefix: string;
}

/** An ingest answer as usage counts it: whether it refused, and why (`kind`). */
export interface IngestAnswer {
  kind: 'accepted' | 'invalid' | 'forbidden' | 'too-large' | 'too-many' | 'unavailable';
}

/**
 * Ingest's refusals in their accounts' usage, once per request. Accepted events are not counted
 * here: they are counted from the intake journal when the reconciler removes their batch
 * (domain/intake/intake-usage.ts), durable before the answer and removed once, so a process
 * killed before its next flush loses none of them. Refused (over quota, invalid, too large,
 * another account's): each event of the request, or the request as one when its events could
 * not be read — only where the account is known to exist: the key's, or, over quota, the
 * events' own (checked before the quota). Events an unavailable answer failed were not refused:
 * Herald could not take them, and the producer resends them.
 */
export function meterIngest(usage: UsageMeter, at: Date, keyAccount: string | undefined, events: readonly HeraldEvent[] | undefined, answer: IngestAnswer): void {
  if (answer.kind === 'accepted' || answer.kind === 'unavailable') return;
  if (keyAccount === undefined && answer.kind !== 'too-many') return;
  if (!events?.length) return usage.meter(keyAccount ?? DEFAULT_ACCOUNT, at, { eventsRefused: 1 });
  for (const e of events) usage.meter(keyAccount ?? eventAccount(e.attributes), at, { eventsRefused: 1 });
}
