import { Firestore } from '@google-cloud/firestore';
import { FirestoreAccountStore } from '../../shared/adapters/firestore/accounts';
import { FirestoreAccountDataEraser } from '../../shared/adapters/firestore/account-data';
import { COLLECTIONS } from '../../shared/firestore-schema';
import { eraseAccountData } from '../../shared/app/access/account-purge';
import { systemClock } from '../../shared/ports/clock';
import { accountStoreConformance } from '../support/account-store-conformance';

const projectId = 'account-store-test';
const db = new Firestore({ projectId, ignoreUndefinedProperties: true });

async function wipe(): Promise<void> {
  const res = await fetch(`http://${process.env.FIRESTORE_EMULATOR_HOST}/emulator/v1/projects/${projectId}/databases/(default)/documents`, { method: 'DELETE' });
  if (!res.ok) throw new Error(`could not clear the Firestore emulator: ${res.status}`);
}

afterAll(() => db.terminate());

accountStoreConformance('firestore', async () => {
  await wipe();
  return new FirestoreAccountStore(db);
});

describe("a deleted account's data, erased from Firestore", () => {
  /** Documents of `acme`, and of its neighbours: `acme-2` (an id that starts the same) and `default`'s destination named `acme`. */
  const seeded: Record<string, { id: string; data: Record<string, unknown> }[]> = {
    [COLLECTIONS.accountKeys]: [
      { id: 'k-acme', data: { account: 'acme' } },
      { id: 'k-acme-2', data: { account: 'acme-2' } },
    ],
    [COLLECTIONS.replays]: [
      { id: 'r-acme', data: { request: { account: 'acme' }, createdAt: '2026-11-25T12:00:00.000Z' } },
      { id: 'r-acme-2', data: { request: { account: 'acme-2' }, createdAt: '2026-11-25T12:00:00.000Z' } },
      { id: 'r-everyone', data: { request: {}, createdAt: '2026-11-25T12:00:00.000Z' } },
    ],
    [COLLECTIONS.eventTypes]: [
      { id: 'acme~aaa', data: { account: 'acme' } },
      { id: 'acme~bbb', data: { account: 'acme' } },
      { id: 'acme-2~aaa', data: { account: 'acme-2' } },
    ],
    [COLLECTIONS.publishQuotas]: [
      { id: 'acme', data: { tokens: 1 } },
      { id: 'acme-2', data: { tokens: 1 } },
    ],
    [COLLECTIONS.rateControl]: [
      { id: 'acme_orders', data: {} },
      { id: 'acme-2_orders', data: {} },
      { id: 'acme', data: {} },
    ],
    [COLLECTIONS.rates]: [
      { id: 'acme_orders~1000~0', data: { destinationId: 'acme_orders' } },
      { id: 'acme_gone~1000~3', data: { destinationId: 'acme_gone' } },
      { id: 'acme-2_orders~1000~0', data: { destinationId: 'acme-2_orders' } },
      { id: 'acme~1000~0', data: { destinationId: 'acme' } },
    ],
    [COLLECTIONS.sharedRates]: [
      { id: 'acme_~w1~0~1000', data: { destinations: ['acme_orders', 'acme_gone'] } },
      { id: 'acme-2_~w1~0~1000', data: { destinations: ['acme-2_orders'] } },
      { id: 'default_~w1~0~1000', data: { destinations: ['acme'] } },
    ],
    [COLLECTIONS.deliveries]: [
      // 1,203 of acme's: more than one step's worth, across a destination deleted long ago.
      ...Array.from({ length: 1200 }, (_, i) => ({ id: `acme_orders.k${String(i).padStart(4, '0')}`, data: { destinationId: 'acme_orders' } })),
      ...['a', 'b', 'c'].map((k) => ({ id: `acme_gone.${k}`, data: { destinationId: 'acme_gone' } })),
      { id: 'acme-2_orders.k1', data: { destinationId: 'acme-2_orders' } },
      { id: 'acme.k1', data: { destinationId: 'acme' } },
      { id: 'acmeorders.k1', data: { destinationId: 'acmeorders' } },
    ],
  };

  async function seed(): Promise<void> {
    await wipe();
    const writes = Object.entries(seeded).flatMap(([collection, docs]) => docs.map((d) => ({ collection, ...d })));
    for (let i = 0; i < writes.length; i += 400) {
      const batch = db.batch();
      for (const w of writes.slice(i, i + 400)) batch.set(db.collection(w.collection).doc(w.id), w.data);
      await batch.commit();
    }
  }

  async function left(): Promise<Record<string, string[]>> {
    const out: Record<string, string[]> = {};
    for (const collection of Object.keys(seeded)) {
      const ids = (await db.collection(collection).select().get()).docs.map((d) => d.id);
      out[collection] = collection === COLLECTIONS.deliveries ? [...ids.filter((id) => !id.startsWith('acme_orders.')), `acme_orders: ${ids.filter((id) => id.startsWith('acme_orders.')).length}`] : ids.sort();
    }
    return out;
  }

  const othersOnly = {
    [COLLECTIONS.accountKeys]: ['k-acme-2'],
    [COLLECTIONS.replays]: ['r-acme-2', 'r-everyone'],
    [COLLECTIONS.eventTypes]: ['acme-2~aaa'],
    [COLLECTIONS.publishQuotas]: ['acme-2'],
    [COLLECTIONS.rateControl]: ['acme', 'acme-2_orders'],
    [COLLECTIONS.rates]: ['acme-2_orders~1000~0', 'acme~1000~0'],
    [COLLECTIONS.sharedRates]: ['acme-2_~w1~0~1000', 'default_~w1~0~1000'],
    [COLLECTIONS.deliveries]: ['acme-2_orders.k1', 'acme.k1', 'acmeorders.k1', 'acme_orders: 0'],
  };

  test("every store's documents of the account go, a step of at most the limit at a time; its neighbours' stay", async () => {
    await seed();
    const eraser = new FirestoreAccountDataEraser(db);
    const steps: number[] = [];
    let cursor: string | undefined;
    do {
      const step = await eraser.eraseSome('acme', 500, cursor);
      steps.push(step.deleted);
      cursor = step.cursor;
    } while (cursor !== undefined);
    expect(Math.max(...steps)).toBe(500);
    expect(steps.reduce((a, b) => a + b, 0)).toBe(1 + 1 + 2 + 1 + 1 + 2 + 1 + 1203);
    expect(await left()).toEqual(othersOnly);
    // Again: nothing left to delete.
    expect(await eraser.eraseSome('acme', 500)).toEqual({ deleted: 0 });
  });

  test('stopped when its time is up, it goes on later where it is, and ends with a pass that finds nothing', async () => {
    await seed();
    const deps = { accountData: new FirestoreAccountDataEraser(db), clock: systemClock };
    // No time at all: one step, and the rest is left.
    const first = await eraseAccountData(deps, 'acme', 0);
    expect(first.clean).toBe(false);
    expect(first.deleted).toBeGreaterThan(0);
    const rest = await eraseAccountData(deps, 'acme', Date.now() + 30_000);
    expect(rest.clean).toBe(true);
    expect(first.deleted + rest.deleted).toBe(1212);
    expect(await left()).toEqual(othersOnly);
  });
});
