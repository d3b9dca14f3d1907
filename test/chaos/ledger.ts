import { DeliveryStatus } from '../../shared/domain/retry/delivery';

/**
 * What became of every (accepted event, destination) pair, from the delivery records and what
 * the receivers saw. Lost: no record at all, a record with no way forward, or a DELIVERED
 * record whose receiver never answered 2xx for the event.
 */

export interface RecordState {
  status: DeliveryStatus;
  availableAt?: string;
  claimedAt?: string;
  /** An ordered delivery's key and place (issue 38). */
  order?: { key: string; seq: number };
  /** Created by the reconciler (its lane message missing when it looked). */
  recovered?: boolean;
  /** PENDING for a rate turn, not a retry's schedule (diagnostics.ts). */
  rateDeferred?: boolean;
}

export interface ReceiverCounts {
  /** Requests per webhook-id. */
  requests: Map<string, number>;
  /** Requests the receiver answered 2xx, per webhook-id. */
  accepted: Map<string, number>;
  /** Webhook-ids in the order of their first 2xx answer. */
  firstAccepted: string[];
  /** Requests whose answer was written whole (the client still waiting for it), per webhook-id; absent in older ledgers. */
  answered?: Map<string, number>;
  /** Of those, the 2xx answers. */
  answered2xx?: Map<string, number>;
}

export interface DestinationLedger {
  destinationId: string;
  expected: number;
  delivered: number;
  dead: number;
  queued: number;
  /** PENDING with a due time, or IN_FLIGHT under a claim that will expire. */
  scheduled: number;
  lost: number;
  /** Extra 2xx receptions of an event already received (same webhook-id). */
  duplicates: number;
  /** Records the reconciler created (the lane message was late or lost). */
  recovered: number;
  /**
   * First receipts of an ordered key's event after one of a later place in the same key (issue
   * 38): counted per receipt whose place is below the highest place of its key received before it.
   */
  inversions: number;
  /** Lost pairs, for the report (the first few). */
  lostExamples: string[];
}

export function ledgerFor(
  destinationId: string,
  eventKeys: readonly string[],
  records: ReadonlyMap<string, RecordState>,
  receiver: ReceiverCounts,
  webhookIdOf: (eventKey: string) => string,
): DestinationLedger {
  const l: DestinationLedger = { destinationId, expected: eventKeys.length, delivered: 0, dead: 0, queued: 0, scheduled: 0, lost: 0, duplicates: 0, recovered: 0, inversions: 0, lostExamples: [] };
  l.inversions = inversionsOf(destinationId, eventKeys, records, receiver.firstAccepted, webhookIdOf);
  const lose = (key: string, why: string) => {
    l.lost++;
    if (l.lostExamples.length < 5) l.lostExamples.push(`${destinationId}.${key}: ${why}`);
  };
  for (const key of eventKeys) {
    const record = records.get(`${destinationId}.${key}`);
    const received = receiver.accepted.get(webhookIdOf(key)) ?? 0;
    l.duplicates += Math.max(0, received - 1);
    if (record?.recovered) l.recovered++;
    if (!record) {
      lose(key, received > 0 ? 'received, but no delivery record' : 'no delivery record and never received');
      continue;
    }
    switch (record.status) {
      case 'DELIVERED':
        if (received === 0) lose(key, 'DELIVERED, but the receiver never answered 2xx for it');
        else l.delivered++;
        break;
      case 'DEAD':
        l.dead++;
        break;
      case 'QUEUED':
        l.queued++;
        break;
      case 'PENDING':
        if (record.availableAt) l.scheduled++;
        else lose(key, 'PENDING with no due time');
        break;
      case 'IN_FLIGHT':
        if (record.claimedAt) l.scheduled++;
        else lose(key, 'IN_FLIGHT with no claim');
        break;
    }
  }
  return l;
}

/** Inversions among first receipts, by the places Herald gave the events (their records' `order`). */
export function inversionsOf(
  destinationId: string,
  eventKeys: readonly string[],
  records: ReadonlyMap<string, RecordState>,
  firstAccepted: readonly string[],
  webhookIdOf: (eventKey: string) => string,
): number {
  const place = new Map<string, { key: string; seq: number }>();
  for (const key of eventKeys) {
    const order = records.get(`${destinationId}.${key}`)?.order;
    if (order) place.set(webhookIdOf(key), order);
  }
  const highest = new Map<string, number>();
  let inversions = 0;
  for (const id of firstAccepted) {
    const order = place.get(id);
    if (!order) continue;
    const top = highest.get(order.key) ?? 0;
    if (order.seq < top) inversions++;
    else highest.set(order.key, order.seq);
  }
  return inversions;
}

/** Every pair settled: DELIVERED (and received), DEAD or QUEUED. */
export function isQuiet(ledgers: readonly DestinationLedger[]): boolean {
  return ledgers.every((l) => l.delivered + l.dead + l.queued === l.expected);
}

export function totals(ledgers: readonly DestinationLedger[]): Omit<DestinationLedger, 'destinationId' | 'lostExamples'> {
  const sum = { expected: 0, delivered: 0, dead: 0, queued: 0, scheduled: 0, lost: 0, duplicates: 0, recovered: 0, inversions: 0 };
  for (const l of ledgers) for (const k of Object.keys(sum) as (keyof typeof sum)[]) sum[k] += l[k];
  return sum;
}

export function formatLedger(ledgers: readonly DestinationLedger[]): string {
  const head = ['destination', 'expected', 'delivered', 'dead', 'queued', 'scheduled', 'lost', 'duplicates', 'recovered', 'inversions'];
  const rows = [...ledgers.map((l) => [l.destinationId, l.expected, l.delivered, l.dead, l.queued, l.scheduled, l.lost, l.duplicates, l.recovered, l.inversions]), ['total', ...Object.values(totals(ledgers))]];
  const cells = [head, ...rows.map((r) => r.map(String))];
  const widths = head.map((_, i) => Math.max(...cells.map((r) => r[i]!.length)));
  return cells.map((r) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ')).join('\n');
}
