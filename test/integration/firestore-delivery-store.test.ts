import { Firestore, Timestamp } from '@google-cloud/firestore';
import { FIRESTORE_TTL_FIELDS, FirestoreDeliveryStore } from '../../shared/adapters/firestore-stores';
import { HeraldEvent } from '../../shared/domain/event';
import { DEAD_RECORD_MIN_KEEP_MS } from '../../shared/domain/delivery-retention';
import { FirestoreRateStore } from '../../shared/adapters/firestore-rates';
import { rateStoreConformance } from '../support/rate-store-conformance';
import { deliveryStoreConformance } from '../support/delivery-store-conformance';

const projectId = 'delivery-store-test';
const db = new Firestore({ projectId, ignoreUndefinedProperties: true });

async function wipe(): Promise<void> {
  const res = await fetch(`http://${process.env.FIRESTORE_EMULATOR_HOST}/emulator/v1/projects/${projectId}/databases/(default)/documents`, { method: 'DELETE' });
  if (!res.ok) throw new Error(`could not clear the Firestore emulator: ${res.status}`);
}

afterAll(() => db.terminate());

deliveryStoreConformance('firestore', async () => {
  await wipe();
  return new FirestoreDeliveryStore(db);
});

rateStoreConformance('firestore', async () => {
  await wipe();
  return new FirestoreRateStore(db);
});

describe('firestore delivery store: retention (the TTL field Firestore deletes records by; the emulator never deletes)', () => {
  const RETENTION_MS = 7 * 86_400_000;
  let now = new Date('2026-11-26T12:00:00.000Z');
  const store = new FirestoreDeliveryStore(db, undefined, { retentionMs: RETENTION_MS, now: () => now });
  const stored = async (id: string) => (await db.collection(FIRESTORE_TTL_FIELDS.deliveries.collection).doc(id).get()).get(FIRESTORE_TTL_FIELDS.deliveries.field) as Timestamp | undefined;
  const base = { destinationId: 'dest-a', eventSource: '/src', eventType: 't', publishedAt: '2026-11-26T11:59:59.000Z' } as const;
  const event = { attributes: { id: 'e', source: '/src', type: 't', specversion: '1.0' }, data: Buffer.from('{}') } as HeraldEvent;

  beforeEach(async () => {
    await wipe();
    now = new Date('2026-11-26T12:00:00.000Z');
  });

  test('a record created settled carries its expiry; the record read back does not show it', async () => {
    expect(await store.create({ ...base, id: 'dest-a.ok', eventId: 'ok', status: 'DELIVERED', attempts: 1 })).toBe(true);
    expect((await stored('dest-a.ok'))?.toDate()).toEqual(new Date(now.getTime() + RETENTION_MS));
    expect(await store.get('dest-a.ok')).not.toHaveProperty('expireAt');
    const page = await store.log('dest-a', { limit: 10 });
    expect(page.deliveries[0]).not.toHaveProperty('expireAt');
  });

  test('an update keeps the expiry; work again (a replay) clears it; settling anew sets a new one', async () => {
    await store.create({ ...base, id: 'dest-a.d', eventId: 'd', status: 'DEAD', attempts: 3, deadLetterDueAt: now.toISOString(), event });
    expect(await stored('dest-a.d')).toBeUndefined();
    // The dead letter is out: the record settles now, kept as long as the dead-letter topic keeps the letter (31 days > 7).
    await store.update('dest-a.d', (r) => r && { ...r, deadLetterDueAt: undefined });
    const settled = (await stored('dest-a.d'))?.toDate();
    expect(settled).toEqual(new Date(now.getTime() + DEAD_RECORD_MIN_KEEP_MS));
    now = new Date(now.getTime() + 3_600_000);
    await store.update('dest-a.d', (r) => r && { ...r, reason: 'rewritten later' });
    expect((await stored('dest-a.d'))?.toDate()).toEqual(settled);
    await store.update('dest-a.d', (r) => r && { ...r, status: 'PENDING', attempts: 0 });
    expect(await stored('dest-a.d')).toBeUndefined();
    now = new Date(now.getTime() + 3_600_000);
    await store.update('dest-a.d', (r) => r && { ...r, status: 'DELIVERED', attempts: 1 });
    expect((await stored('dest-a.d'))?.toDate()).toEqual(new Date(now.getTime() + RETENTION_MS));
  });

  test('a record that holds work carries no expiry: PENDING, IN_FLIGHT, QUEUED', async () => {
    for (const status of ['PENDING', 'IN_FLIGHT', 'QUEUED'] as const) {
      await store.put({ ...base, id: `dest-a.${status}`, eventId: status, status, attempts: 0, event });
      expect(await stored(`dest-a.${status}`)).toBeUndefined();
    }
  });
});
