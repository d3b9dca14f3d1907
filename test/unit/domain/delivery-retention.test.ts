import { DELIVERY_STATUSES, DeliveryStatus } from '../../../shared/domain/retry/delivery';
import { DAY_MS, DEAD_RECORD_MIN_KEEP_MS, deliveryExpiry, holdsWork } from '../../../shared/domain/delivery/delivery-retention';
import { heraldTopology } from '../../../shared/topology';

const RETENTION = 30 * DAY_MS;
const now = new Date('2026-11-26T12:00:00.000Z');
const publishedAt = '2026-11-26T11:59:59.900Z';

describe('a delivery record\'s expiry (the TTL field Firestore deletes it by)', () => {
  test('a first-attempt success expires its retention after it settled', () => {
    expect(deliveryExpiry({ status: 'DELIVERED', publishedAt }, RETENTION, now)).toEqual(new Date(now.getTime() + RETENTION));
  });

  test('a record that holds work never expires: PENDING, IN_FLIGHT, QUEUED, DEAD owing its dead letter', () => {
    for (const status of ['PENDING', 'IN_FLIGHT', 'QUEUED'] as const) {
      expect(deliveryExpiry({ status, publishedAt }, RETENTION, now)).toBeUndefined();
      // A stored expiry from an earlier settled run (a replayed DEAD record) is dropped.
      expect(deliveryExpiry({ status, publishedAt }, RETENTION, now, new Date(now.getTime() + DAY_MS))).toBeUndefined();
    }
    expect(deliveryExpiry({ status: 'DEAD', publishedAt, deadLetterDueAt: now.toISOString() }, RETENTION, now)).toBeUndefined();
  });

  test('a DEAD record expires once its dead letter is out, never before the dead-letter topic drops the letter', () => {
    expect(deliveryExpiry({ status: 'DEAD', publishedAt }, 90 * DAY_MS, now)).toEqual(new Date(now.getTime() + 90 * DAY_MS));
    expect(deliveryExpiry({ status: 'DEAD', publishedAt }, 7 * DAY_MS, now)).toEqual(new Date(now.getTime() + DEAD_RECORD_MIN_KEEP_MS));
    expect(deliveryExpiry({ status: 'DELIVERED', publishedAt }, 7 * DAY_MS, now)).toEqual(new Date(now.getTime() + 7 * DAY_MS));
    // A replay finds the record of any letter the topic still holds.
    expect(DEAD_RECORD_MIN_KEEP_MS).toBe((heraldTopology({ prefix: 'herald' }).topics.deadLetter.messageRetentionSeconds ?? 0) * 1000);
  });

  test('a delivery that settles long after its publish gets its whole window from then', () => {
    const old = new Date(now.getTime() - 40 * DAY_MS).toISOString();
    expect(deliveryExpiry({ status: 'DELIVERED', publishedAt: old }, RETENTION, now)).toEqual(new Date(now.getTime() + RETENTION));
  });

  test('a later write of a settled record keeps its expiry', () => {
    const kept = new Date(now.getTime() + 5 * DAY_MS);
    expect(deliveryExpiry({ status: 'DELIVERED', publishedAt }, RETENTION, now, kept)).toBe(kept);
  });

  test('a publish time ahead of the writer\'s clock never shortens the window; none counts from the write', () => {
    const ahead = new Date(now.getTime() + 60_000);
    expect(deliveryExpiry({ status: 'DELIVERED', publishedAt: ahead.toISOString() }, RETENTION, now)).toEqual(new Date(ahead.getTime() + RETENTION));
    expect(deliveryExpiry({ status: 'DELIVERED' }, RETENTION, now)).toEqual(new Date(now.getTime() + RETENTION));
  });

  test('every status is classified: only DELIVERED and DEAD without an owed letter are settled', () => {
    const settled = DELIVERY_STATUSES.filter((status: DeliveryStatus) => !holdsWork({ status }));
    expect(settled).toEqual(['DELIVERED', 'DEAD']);
  });
});
