import { Firestore, Query } from '@google-cloud/firestore';
import { OperationCounter } from '../../shared/adapters/firestore/stores';
import { FirestoreDeliveryStore } from '../../shared/adapters/firestore/deliveries/delivery-store';
import { COLLECTIONS } from '../../shared/firestore-schema';
import { unpackGroup } from '../../shared/adapters/firestore/deliveries/stored-group';
import { DeliveryRecord } from '../../shared/domain/retry/delivery';
import { retryOnOverload } from '../../shared/app/support/overload-retry';
import { RECORD_RETRY } from '../../shared/app/delivery/delivery-context';
import { loseReplies } from '../support/lost-replies';
import { deliveredRecord, GROUPED_PUBLISHED } from '../support/grouped-records';
import { keepNewest, RecentEntry } from '../../shared/domain/delivery/recent-log';
import { headEntryId } from '../../shared/domain/delivery/grouped-outcomes';

/**
 * Group commits under faults (issue 51): a commit whose reply is lost is not written again as
 * a second group; a queue of any size commits within Firestore's per-commit limits; a failure
 * of a delivery whose success waits in this instance's queue does not stand beside it.
 */
const projectId = 'delivery-groups-test';
const db = new Firestore({ projectId, ignoreUndefinedProperties: true });
const groups = () => db.collection(COLLECTIONS.deliveryGroups);

async function wipe(): Promise<void> {
  const res = await fetch(`http://${process.env.FIRESTORE_EMULATOR_HOST}/emulator/v1/projects/${projectId}/databases/(default)/documents`, { method: 'DELETE' });
  if (!res.ok) throw new Error(`could not clear the Firestore emulator: ${res.status}`);
}

afterAll(() => db.terminate());
beforeEach(() => wipe());

const published = GROUPED_PUBLISHED;
const delivered = deliveredRecord;

/** How deliver adds an outcome (app/delivery/batch-attempt.ts): tried again on Herald's overload, DEADLINE_EXCEEDED among it. */
const addAsDeliverDoes = (store: FirestoreDeliveryStore, r: DeliveryRecord) => retryOnOverload(() => store.addDelivered(r, { lingerMs: 50 }), RECORD_RETRY);

/** Every group member stored, by delivery id: how many copies each has. */
async function copiesStored(): Promise<Map<string, number>> {
  const count = new Map<string, number>();
  for (const doc of (await groups().get()).docs) for (const m of unpackGroup(doc.get('packed') as Buffer)) count.set(m.id as string, (count.get(m.id as string) ?? 0) + 1);
  return count;
}

/** The commits this client sends, by the number of writes in each and their size in bytes (as JSON, bytes counted as their length). */
function watchCommits(): { commits: { writes: number; bytes: number }[]; stop(): void } {
  type Request = (method: string, request: unknown, ...rest: unknown[]) => Promise<unknown>;
  const client = db as unknown as { request: Request };
  const original = client.request;
  const commits: { writes: number; bytes: number }[] = [];
  client.request = function (this: unknown, method, request, ...rest) {
    if (method === 'commit') {
      const writes = (request as { writes?: unknown[] }).writes ?? [];
      const bytes = Buffer.byteLength(JSON.stringify(writes, (_k, v: unknown) => (v && typeof v === 'object' && (v as { type?: string }).type === 'Buffer' ? 'x'.repeat(((v as { data: unknown[] }).data ?? []).length) : v)));
      commits.push({ writes: writes.length, bytes });
    }
    return original.call(this, method, request, ...rest);
  };
  return { commits, stop: () => void (client.request = original) };
}

describe('a group commit whose reply was lost (it landed)', () => {
  test('is not written again: every outcome resolves created, in one group, no duplicate recorded', async () => {
    const store = new FirestoreDeliveryStore(db, new OperationCounter(), undefined, { alone: 'group' });
    // The first group commit loses its reply; every later one is answered.
    let draws = 0;
    const fault = loseReplies({ rate: 0.5, projectId, paths: /delivery-groups\//, random: () => (draws++ === 0 ? 0 : 0.9) });
    let added;
    try {
      added = await Promise.all([1, 2, 3].map((n) => addAsDeliverDoes(store, delivered('acme_orders', n))));
    } finally {
      fault.stop();
    }
    expect(fault.lost).toBe(1);
    expect(added.map((a) => a.created)).toEqual([true, true, true]);
    // One copy of each, in the group its callers were told of.
    expect(await copiesStored()).toEqual(new Map([1, 2, 3].map((n) => [`acme_orders.e${n}`, 1])));
    const named = new Set(added.map((a) => (a.created ? a.group : undefined)));
    expect(named.size).toBe(1);
    expect((await groups().get()).docs.map((d) => d.id)).toEqual([...named]);
    for (const n of [1, 2, 3]) expect(await store.get(`acme_orders.e${n}`)).not.toHaveProperty('duplicates');
  });

  test('nor when the replies to its tries again are lost as well', async () => {
    const store = new FirestoreDeliveryStore(db, new OperationCounter(), undefined, { alone: 'group' });
    const fault = loseReplies({ rate: 1, projectId, paths: /delivery-groups\// });
    let added;
    try {
      added = await Promise.all([1, 2].map((n) => addAsDeliverDoes(store, delivered('acme_orders', n))));
    } finally {
      fault.stop();
    }
    expect(added.map((a) => a.created)).toEqual([true, true]);
    expect(await copiesStored()).toEqual(new Map([1, 2].map((n) => [`acme_orders.e${n}`, 1])));
  });
});

describe('a record created alone whose reply was lost (it landed)', () => {
  test('a lone success is created, not taken for a redelivery when tried again', async () => {
    const store = new FirestoreDeliveryStore(db);
    let draws = 0;
    const fault = loseReplies({ rate: 0.5, projectId, paths: /deliveries\//, random: () => (draws++ === 0 ? 0 : 0.9) });
    let added;
    try {
      added = await addAsDeliverDoes(store, delivered('acme_orders', 1));
    } finally {
      fault.stop();
    }
    expect(fault.lost).toBe(1);
    expect(added).toEqual({ created: true });
    expect(await store.get('acme_orders.e1')).toEqual(delivered('acme_orders', 1));
  });

  test("a failure's record is created; another copy's record found there is not taken for it", async () => {
    const store = new FirestoreDeliveryStore(db);
    const dead: DeliveryRecord = { ...delivered('acme_orders', 2), status: 'DEAD', deadLetterDueAt: published };
    const fault = loseReplies({ rate: 1, projectId, paths: /deliveries\// });
    try {
      expect(await retryOnOverload(() => store.create(dead, { unlessGrouped: true }), RECORD_RETRY)).toBe(true);
    } finally {
      fault.stop();
    }
    // A second copy's send (its own time) finds the first's record: refused, as before.
    expect(await store.create({ ...dead, lastAttemptAt: '2026-11-26T12:00:05.000Z' })).toBe(false);
  });
});

describe('the log head of a delivery recorded twice', () => {
  test('names it once, with both groups; its first-page row counts the other copy a duplicate', async () => {
    const store = new FirestoreDeliveryStore(db, undefined, undefined, { alone: 'group' });
    const first = await store.addDelivered(delivered('acme_orders', 1));
    // A redelivered push sent again: a second group copy.
    const again = await store.addDelivered(delivered('acme_orders', 1, { lastAttemptAt: '2026-11-26T12:00:03.000Z' }));
    let list: RecentEntry[] = [];
    for (const added of [first, again]) list = keepNewest(list, [published, headEntryId('acme_orders.e1', added.created ? added.group : undefined)]);
    expect(list).toHaveLength(1);
    const rows = await store.logRows(list.map((e) => e[1]));
    expect(rows).toEqual([expect.objectContaining({ id: 'acme_orders.e1', duplicates: { count: 1, lastAt: '2026-11-26T12:00:03.000Z' } })]);
  });
});

describe("a group commit within Firestore's per-commit limits (500 writes, 10 MiB), whatever the queue holds", () => {
  test('600 groups queued (600 accounts) commit in several commits of at most 500 writes; every outcome is durable', async () => {
    const ops = new OperationCounter();
    const store = new FirestoreDeliveryStore(db, ops, undefined, { alone: 'group' });
    const watch = watchCommits();
    let added;
    try {
      // Queued together: the first commit is in flight while the rest arrive.
      added = await Promise.all(Array.from({ length: 601 }, (_, n) => store.addDelivered(delivered(`acct${n}_orders`, n))));
    } finally {
      watch.stop();
    }
    expect(added.every((a) => a.created)).toBe(true);
    expect(Math.max(...watch.commits.map((c) => c.writes))).toBeLessThanOrEqual(500);
    expect((await copiesStored()).size).toBe(601);
    expect(ops.writes).toBe(601);
  });
});

describe("a failure beside a success still in this instance's queue", () => {
  test('does not stand: create(…, {unlessGrouped}) hurries the success, which is then the record; the failure is refused', async () => {
    const store = new FirestoreDeliveryStore(db);
    const id = 'acme_orders.e7';
    // A bundle member's success, lingering for the rest of its bundle (which never comes).
    const success = store.addDelivered(delivered('acme_orders', 7), { lingerMs: 2_000, until: new Promise(() => undefined) });
    // A second copy of the delivery (a redelivered bundle) fails for good.
    const dead: DeliveryRecord = { ...delivered('acme_orders', 7), status: 'DEAD', lastAttemptAt: '2026-11-26T12:00:00.500Z', deadLetterDueAt: '2026-11-26T12:00:00.500Z' };
    const t = Date.now();
    expect(await store.create(dead, { unlessGrouped: true })).toBe(false);
    expect(await success).toMatchObject({ created: true });
    // It did not wait out the bundle's linger.
    expect(Date.now() - t).toBeLessThan(1_500);
    expect(await store.get(id)).toMatchObject({ status: 'DELIVERED' });
  });

  test('stands when that success could not be recorded after all (its commit failed)', async () => {
    const store = new FirestoreDeliveryStore(db, undefined, undefined, { alone: 'group' });
    // A member no JSON holds fails its group's commit, as an outage would.
    const bad = { ...delivered('acme_orders', 8), lastError: { at: published, error: 'x', big: 1n } } as unknown as DeliveryRecord;
    const success = store.addDelivered(bad, { lingerMs: 2_000, until: new Promise(() => undefined) });
    const failed = expect(success).rejects.toBeDefined();
    const dead: DeliveryRecord = { ...delivered('acme_orders', 8), status: 'DEAD', deadLetterDueAt: '2026-11-26T12:00:00.500Z' };
    expect(await store.create(dead, { unlessGrouped: true })).toBe(true);
    await failed;
    expect(await store.get('acme_orders.e8')).toMatchObject({ status: 'DEAD' });
  });
});

describe("a late success beside a copy (create's unlessGrouped: 'here')", () => {
  test("is refused beside this instance's group copy, committed or not, with no query of the groups", async () => {
    const store = new FirestoreDeliveryStore(db, undefined, undefined, { alone: 'group' });
    expect((await store.addDelivered(delivered('acme_orders', 21))).created).toBe(true);
    const pending = store.addDelivered(delivered('acme_orders', 22), { lingerMs: 2_000, until: new Promise(() => undefined) });
    const queries = jest.spyOn(Query.prototype, 'get');
    try {
      expect(await store.create(delivered('acme_orders', 21), { unlessGrouped: 'here' })).toBe(false);
      expect(await store.create(delivered('acme_orders', 22), { unlessGrouped: 'here' })).toBe(false);
      expect(queries).not.toHaveBeenCalled();
    } finally {
      queries.mockRestore();
    }
    expect(await pending).toMatchObject({ created: true });
  });

  test("stands beside another instance's group copy (as any first success would), and not beside a document of its own", async () => {
    const elsewhere = new FirestoreDeliveryStore(db, undefined, undefined, { alone: 'group' });
    expect((await elsewhere.addDelivered(delivered('acme_orders', 23))).created).toBe(true);
    const here = new FirestoreDeliveryStore(db);
    expect(await here.create(delivered('acme_orders', 23), { unlessGrouped: 'here' })).toBe(true);
    // The reconciler's record (a document of its own) keeps a late success out.
    expect(await here.create(delivered('acme_orders', 23), { unlessGrouped: 'here' })).toBe(false);
  });
});

describe('lookups of group copies made at once', () => {
  test('share one query (up to its 30 values), and each gets its own records', async () => {
    const elsewhere = new FirestoreDeliveryStore(db, undefined, undefined, { alone: 'group' });
    for (const n of [31, 33, 35]) expect((await elsewhere.addDelivered(delivered('acme_orders', n))).created).toBe(true);
    const store = new FirestoreDeliveryStore(db);
    const queries = jest.spyOn(Query.prototype, 'get');
    let found: (DeliveryRecord | undefined)[];
    try {
      // Ten resent members of a bundle, each read before its first send: 2 values each, 15 to a query.
      found = await Promise.all(Array.from({ length: 10 }, (_, i) => store.get(delivered('acme_orders', 30 + i).id)));
      expect(queries).toHaveBeenCalledTimes(1);
      queries.mockClear();
      found = [...found, ...(await Promise.all(Array.from({ length: 20 }, (_, i) => store.get(delivered('acme_orders', 40 + i).id))))];
      expect(queries).toHaveBeenCalledTimes(2);
    } finally {
      queries.mockRestore();
    }
    expect(found.map((r, i) => (r === undefined ? undefined : [i + 30, r.status]))).toEqual(found.map((_, i) => ([31, 33, 35].includes(i + 30) ? [i + 30, 'DELIVERED'] : undefined)));
  });
});
