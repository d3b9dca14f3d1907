/**
 * Whether what Herald shows is what happened (issue 51), from its own views — the delivery log
 * and the stats, read through the admin API as an operator would — set against what each
 * receiver saw: every delivery one row in the log (and on its first page), no recorded
 * duplicate that no send stands behind, and the destination's attempt and success counts equal
 * to the requests its receiver answered and the 2xx among them.
 *
 * Exact only in a run without kills: a process killed between a receiver's answer and its
 * record (or before its counters are flushed) makes the receiver see what Herald never could.
 */

/** What the log shows of one delivery. */
export interface LogRow {
  id: string;
  status: string;
  duplicates?: { count: number };
}

/** What one receiver answered, per webhook-id: requests whose answer was written, and the 2xx among them. */
export interface ReceiverAnswers {
  answered: ReadonlyMap<string, number>;
  answered2xx: ReadonlyMap<string, number>;
  /** Requests that came in, answered or not (a slow answer the client gave up on). */
  requests: ReadonlyMap<string, number>;
}

export interface ViewsLedger {
  destinationId: string;
  /** Rows past the first of a delivery, over the whole log. */
  rowsShownTwice: number;
  /** The same on the log's first page (its newest rows: the head). */
  firstPageShownTwice: number;
  /** Duplicates recorded on the log's rows. */
  recordedDuplicates: number;
  /** Of those, more than the delivery's sends past its first that reached the receiver. */
  phantomDuplicates: number;
  herald: { attempts: number; successes: number };
  receiver: { requests: number; answered: number; answered2xx: number };
}

const sum = (m: ReadonlyMap<string, number>): number => [...m.values()].reduce((a, b) => a + b, 0);

export function viewsLedger(
  destinationId: string,
  pages: readonly (readonly LogRow[])[],
  receiver: ReceiverAnswers,
  stats: { attempts: number; successes: number },
  webhookIdOfDelivery: (deliveryId: string) => string,
): ViewsLedger {
  const seen = new Map<string, LogRow>();
  let rowsShownTwice = 0;
  for (const row of pages.flat()) {
    if (seen.has(row.id)) rowsShownTwice++;
    else seen.set(row.id, row);
  }
  const first = pages[0] ?? [];
  const firstPageShownTwice = first.length - new Set(first.map((r) => r.id)).size;
  let recordedDuplicates = 0;
  let phantomDuplicates = 0;
  for (const row of seen.values()) {
    const recorded = row.duplicates?.count ?? 0;
    recordedDuplicates += recorded;
    const sentAgain = Math.max(0, (receiver.requests.get(webhookIdOfDelivery(row.id)) ?? 0) - 1);
    phantomDuplicates += Math.max(0, recorded - sentAgain);
  }
  return {
    destinationId,
    rowsShownTwice,
    firstPageShownTwice,
    recordedDuplicates,
    phantomDuplicates,
    herald: stats,
    receiver: { requests: sum(receiver.requests), answered: sum(receiver.answered), answered2xx: sum(receiver.answered2xx) },
  };
}

/**
 * What does not match. Successes must equal the 2xx the receiver answered. Attempts must equal
 * the requests it answered, except for a receiver that refused connections or answered after
 * the attempt timed out for a while (`refuses`): those attempts get no answer, so there they may only be more.
 */
export function viewsMismatches(l: ViewsLedger, refuses: boolean): string[] {
  const out: string[] = [];
  if (l.rowsShownTwice > 0) out.push(`${l.destinationId}: ${l.rowsShownTwice} deliveries shown twice in the log (${l.firstPageShownTwice} on its first page)`);
  if (l.phantomDuplicates > 0) out.push(`${l.destinationId}: ${l.phantomDuplicates} recorded duplicates that were never sent`);
  if (l.herald.successes !== l.receiver.answered2xx) out.push(`${l.destinationId}: Herald counts ${l.herald.successes} successes, the receiver answered 2xx ${l.receiver.answered2xx} times`);
  const attemptsOff = refuses ? l.herald.attempts < l.receiver.answered : l.herald.attempts !== l.receiver.answered;
  if (attemptsOff) out.push(`${l.destinationId}: Herald counts ${l.herald.attempts} attempts, the receiver answered ${l.receiver.answered} requests`);
  return out;
}

export function formatViews(ledgers: readonly ViewsLedger[]): string {
  const head = ['destination', 'rows twice', 'on page 1', 'dup recorded', 'never sent', 'attempts', 'answered', 'successes', '2xx answered'];
  const rows = ledgers.map((l) => [l.destinationId, l.rowsShownTwice, l.firstPageShownTwice, l.recordedDuplicates, l.phantomDuplicates, l.herald.attempts, l.receiver.answered, l.herald.successes, l.receiver.answered2xx].map(String));
  const cells = [head, ...rows];
  const widths = head.map((_, i) => Math.max(...cells.map((r) => r[i]!.length)));
  return cells.map((r) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ')).join('\n');
}

/**
 * Issue 57: the account's usage (GET /admin/accounts/default/usage over the run's days, summed)
 * beside what the run saw: the events ingest accepted, the records, the DELIVERED among them, the
 * requests the receivers answered and the 2xx among them.
 */
export interface UsageLedger {
  herald: { eventsAccepted: number; deliveries: number; delivered: number; attempts: number; successes: number };
  seen: {
    /** Distinct events ingest answered 2xx for. */
    accepted: number;
    /** Tries of POST /ingest never answered: Herald may have accepted their events (counted) without the run knowing. */
    unansweredTries: number;
    records: number;
    delivered: number;
    answered: number;
    answered2xx: number;
  };
}

/**
 * What does not match, and whether a kill may explain it. Accepted events and deliveries are
 * counted from the intake journal as the reconciler removes its batches, which no kill loses:
 * judged in every run. With tries unanswered, Herald may have journaled (and delivered) more than
 * the run knows: then only "not fewer". Delivered and attempts are counted in memory until a
 * flush (a kill loses the last second's): `killable`. Attempts as viewsMismatches judges them; a
 * batched run's receivers count per event, not per request, so its attempts are not compared.
 */
export function usageMismatches(u: UsageLedger, refuses: boolean, batched: boolean): { journal: string[]; killable: string[] } {
  const journal: string[] = [];
  const killable: string[] = [];
  const unsure = u.seen.unansweredTries > 0;
  const off = (into: string[], what: string, herald: number, seen: number, atLeast = unsure) => (atLeast ? herald < seen : herald !== seen) && into.push(`usage counts ${herald} ${what}, the run saw ${seen}`);
  off(journal, 'events accepted', u.herald.eventsAccepted, u.seen.accepted);
  off(journal, 'deliveries', u.herald.deliveries, u.seen.records);
  off(killable, 'delivered', u.herald.delivered, u.seen.delivered);
  if (!batched) {
    off(killable, 'successful attempts', u.herald.successes, u.seen.answered2xx, false);
    off(killable, 'attempts', u.herald.attempts, u.seen.answered, refuses);
  }
  return { journal, killable };
}

export function formatUsage(u: UsageLedger): string {
  const h = u.herald;
  const s = u.seen;
  return `usage (Herald / seen): accepted ${h.eventsAccepted} / ${s.accepted}; deliveries ${h.deliveries} / ${s.records} records; delivered ${h.delivered} / ${s.delivered}; attempts ${h.attempts} / ${s.answered} answered; successes ${h.successes} / ${s.answered2xx} 2xx`;
}
