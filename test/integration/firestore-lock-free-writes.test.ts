import { Firestore } from '@google-cloud/firestore';
import { FirestoreRateLeaseStore } from '../../shared/adapters/firestore/rate-leases';
import { FirestoreQuotaStore } from '../../shared/adapters/firestore/quotas';
import { FirestoreDeliveryStore } from '../../shared/adapters/firestore/deliveries/delivery-store';
import { RATE_LIMITS } from '../../shared/domain/rate/rate-doc';
import { DeliveryRecord } from '../../shared/domain/retry/delivery';

/**
 * Documents every instance writes on the delivery path take no Firestore transaction. A
 * transaction locks what it read, and a process killed inside one leaves the lock until the
 * transaction expires: on the emulator a plain write to the document then waited more than 30 s,
 * and in the chaos run a destination's every instance failed its rate leases ("Transaction lock
 * timeout") and sent nothing for about a minute after a kill; the pump's claims of records a
 * killed pump had read failed the same way. So each is a read, then a write under the read's
 * update time, read again if another instance wrote in between.
 */
const projectId = `rate-lease-lock-${Date.now().toString(36)}`;
const db = new Firestore({ projectId, ignoreUndefinedProperties: true });
afterAll(() => db.terminate());

const request = (holder: string, now: number) => ({ holder, backlog: 5, feedback: { seconds: {} }, bounds: RATE_LIMITS, now });

test('leases, concurrent ones from several instances included, open no transaction', async () => {
  const transactions = jest.spyOn(db, 'runTransaction');
  const instances = [new FirestoreRateLeaseStore(db), new FirestoreRateLeaseStore(db), new FirestoreRateLeaseStore(db)];
  const t0 = Date.now();
  await Promise.all(instances.map((store, i) => store.lease('acme_orders', request(`h${i}`, t0 + i))));
  expect(transactions).not.toHaveBeenCalled();
  transactions.mockRestore();
  const doc = (await db.collection('rate-control').doc('acme_orders').get()).data()!;
  expect(Object.keys(doc.holders as object).sort()).toEqual(['h0', 'h1', 'h2']);
});

test('a publish quota slice and a delivery record update open no transaction', async () => {
  const transactions = jest.spyOn(db, 'runTransaction');
  const quotas = new FirestoreQuotaStore(db);
  expect(await quotas.take('acme', 5, 10, Date.now())).toBe(5);
  const deliveries = new FirestoreDeliveryStore(db);
  const record: DeliveryRecord = { id: 'acme_orders.k1', destinationId: 'acme_orders', eventId: 'e1', eventSource: '/src', eventType: 't', status: 'PENDING', attempts: 0, publishedAt: '2026-12-07T00:00:00.000Z' };
  await deliveries.update(record.id, () => record);
  const claimed = await deliveries.update(record.id, (current) => (current?.status === 'PENDING' ? { ...current, attempts: 1 } : undefined));
  expect(claimed?.attempts).toBe(1);
  expect(transactions).not.toHaveBeenCalled();
  transactions.mockRestore();
});

test('a lease raced by another instance between its read and its write reads again and keeps both', async () => {
  const store = new FirestoreRateLeaseStore(db);
  const ref = db.collection('rate-control').doc('acme_raced');
  const t0 = Date.now();
  await store.lease('acme_raced', request('a', t0));
  // Another instance writes after this lease's first read: the get answers, then the rival commits.
  const get = ref.get.bind(ref);
  let raced = false;
  const spy = jest.spyOn(Object.getPrototypeOf(ref) as { get: typeof ref.get }, 'get').mockImplementation(async function (this: typeof ref) {
    const snap = await get.call(this);
    if (!raced && this.path === ref.path) {
      raced = true;
      await new FirestoreRateLeaseStore(new Firestore({ projectId, ignoreUndefinedProperties: true })).lease('acme_raced', request('c', t0 + 10));
    }
    return snap;
  });
  try {
    await store.lease('acme_raced', request('b', t0 + 20));
  } finally {
    spy.mockRestore();
  }
  expect(raced).toBe(true);
  expect(Object.keys((await ref.get()).data()!.holders as object).sort()).toEqual(['a', 'b', 'c']);
});
