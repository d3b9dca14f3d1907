import { DeliveryRecord } from '../../shared/domain/retry/delivery';

/** When the grouped test records were published (a second before their attempt). */
export const GROUPED_PUBLISHED = '2026-11-26T11:59:59.000Z';

/** A first attempt that ended DELIVERED, as the group commit tests add them: event `e<n>` of `destinationId`. */
export function deliveredRecord(destinationId: string, n: number, fields: Partial<DeliveryRecord> = {}): DeliveryRecord {
  return {
    id: `${destinationId}.e${n}`,
    destinationId,
    eventId: `e${n}`,
    eventSource: '/src',
    eventType: 't',
    status: 'DELIVERED',
    attempts: 1,
    publishedAt: GROUPED_PUBLISHED,
    lastAttemptAt: '2026-11-26T12:00:00.000Z',
    ...fields,
  };
}
