import { randomBytes } from 'node:crypto';
import type { AccountKey } from '../../shared/domain/access/account';
import { mintKey } from '../../shared/domain/access/account';
import { authenticate } from '../../shared/app/access/authenticate';
import { KEY_CACHE_MS, KeyVerifier, UNKNOWN_KEY_READS_BURST, UNKNOWN_KEY_READS_PER_SECOND } from '../../shared/app/access/key-verifier';
import { digestOf } from '../../shared/app/access/push-auth';

/**
 * Issue 50: every well-formed made-up `hk_…` token cost an unauthenticated Firestore read and,
 * past 10,000 of them, pushed real keys out of the cache. Unknown ids are now held apart from
 * known keys, and reads of ids not known as keys are rate-limited per instance.
 */

const T0 = Date.parse('2026-11-26T00:00:00.000Z');
let now = T0;
const clock = { now: () => new Date(now) };

/** A store that counts the reads of each id. */
function countingStore(records: Map<string, AccountKey>) {
  const reads = new Map<string, number>();
  return {
    reads,
    total: () => [...reads.values()].reduce((a, b) => a + b, 0),
    getKey: async (id: string) => {
      reads.set(id, (reads.get(id) ?? 0) + 1);
      return records.get(id);
    },
  };
}

const madeUp = () => `hk_${randomBytes(8).toString('hex')}_${randomBytes(32).toString('base64url')}`;

let records: Map<string, AccountKey>;
let key: string;
let record: AccountKey;

beforeEach(() => {
  now = T0;
  ({ key, record } = mintKey('acme', { name: 'backend' }, 'admin', new Date(T0 - 60_000)));
  records = new Map([[record.id, record]]);
});

test('a flood of made-up keys costs a bounded number of reads, and never pushes a known key out', async () => {
  const store = countingStore(records);
  const keys = new KeyVerifier(store, clock);
  expect(await keys.verify(key)).toEqual({ ok: true, key: record });
  const flood = Array.from({ length: 20_000 }, madeUp);
  const verdicts = await Promise.all(flood.map((t) => keys.verify(t)));
  expect(verdicts.every((v) => v?.ok === false)).toBe(true);
  // Reads of the unknown ids stop at the burst; the known key was read once and is still held.
  expect(store.total() - 1).toBeLessThanOrEqual(UNKNOWN_KEY_READS_BURST);
  expect(await keys.verify(key)).toEqual({ ok: true, key: record });
  expect(store.reads.get(record.id)).toBe(1);

  // A second later, one second's worth of reads more, no more.
  now += 1_000;
  const before = store.total();
  await Promise.all(Array.from({ length: 5_000 }, madeUp).map((t) => keys.verify(t)));
  expect(store.total() - before).toBeLessThanOrEqual(UNKNOWN_KEY_READS_PER_SECOND);
});

test('a known key is read again when due even while unknown ones are refused: its revocation still counts within 5 s', async () => {
  const store = countingStore(records);
  const keys = new KeyVerifier(store, clock);
  expect(await keys.verify(key)).toMatchObject({ ok: true });
  await Promise.all(Array.from({ length: UNKNOWN_KEY_READS_BURST * 2 }, madeUp).map((t) => keys.verify(t)));
  records.set(record.id, { ...record, revokedAt: new Date(now).toISOString() });
  now += KEY_CACHE_MS;
  expect(await keys.verify(key)).toEqual({ ok: false, reason: 'revoked' });
});

test('past the budget a key never seen here is refused as busy, without a read, and found once the budget refills', async () => {
  const store = countingStore(records);
  const keys = new KeyVerifier(store, clock);
  await Promise.all(Array.from({ length: UNKNOWN_KEY_READS_BURST }, madeUp).map((t) => keys.verify(t)));
  expect(await keys.verify(key)).toEqual({ ok: false, reason: 'busy' });
  expect(store.reads.get(record.id)).toBeUndefined();
  const door = { token: digestOf('ingest-token-0123456789'), expects: 'ingest token' };
  const refused = await authenticate({ keys, portalAccess: { session: async () => ({ ok: false, reason: 'revoked', why: 'x' }) }, clock }, door, `Bearer ${key}`);
  expect(refused).toEqual({ ok: false, body: { error: expect.stringContaining('send the request again in a second') } });
  now += 1_000;
  expect(await keys.verify(key)).toEqual({ ok: true, key: record });
});

test('an unknown id is remembered: presented again within the cache time it costs no read and no budget', async () => {
  const store = countingStore(records);
  const keys = new KeyVerifier(store, clock);
  const token = madeUp();
  for (let i = 0; i < 1_000; i++) expect(await keys.verify(token)).toEqual({ ok: false, reason: 'unknown' });
  expect(store.total()).toBe(1);
  expect(await keys.verify(key)).toMatchObject({ ok: true });
});

test('a portal link names the key that minted it: that look-up is never refused for load', async () => {
  const store = countingStore(records);
  const keys = new KeyVerifier(store, clock);
  await Promise.all(Array.from({ length: UNKNOWN_KEY_READS_BURST }, madeUp).map((t) => keys.verify(t)));
  expect(await keys.record(record.id)).toEqual(record);
});
