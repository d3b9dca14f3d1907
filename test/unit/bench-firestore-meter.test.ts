import { collectionOfName, collectionTable, FirestoreMeter, opsDelta, perEvent, totalOps } from '../bench/firestore-meter';

const doc = (path: string) => `projects/p/databases/(default)/documents/${path}`;
const ROOT = 'projects/p/databases/(default)/documents';

describe('collectionOfName', () => {
  it('keeps the collection ids of a document path, without the document ids', () => {
    expect(collectionOfName(doc('deliveries/abc'))).toBe('deliveries');
    expect(collectionOfName(doc('accounts/a1/keys/k1'))).toBe('accounts/keys');
  });
});

describe('FirestoreMeter', () => {
  it('bills each write of a commit once: a set, an update, a create, a transform; a delete as a delete', () => {
    const m = new FirestoreMeter();
    m.unary('commit', { writes: [{ update: { name: doc('deliveries/a') } }, { update: { name: doc('destination-changes/x') } }, { delete: doc('destinations/d') }, { transform: { document: doc('rates/r') } }] }, {});
    expect(m.byCollection).toEqual({
      deliveries: { reads: 0, writes: 1, deletes: 0 },
      'destination-changes': { reads: 0, writes: 1, deletes: 0 },
      destinations: { reads: 0, writes: 0, deletes: 1 },
      rates: { reads: 0, writes: 1, deletes: 0 },
    });
  });

  it('bills nothing for beginning or rolling back a transaction', () => {
    const m = new FirestoreMeter();
    m.unary('beginTransaction', {}, {});
    m.unary('rollback', {}, {});
    expect(m.byCollection).toEqual({});
    expect(m.unmetered).toEqual({});
  });

  it('bills a read for every document a get returns, found or missing (in a transaction or not)', () => {
    const m = new FirestoreMeter();
    const s = m.stream('batchGetDocuments', {});
    s.chunk({ found: { name: doc('deliveries/a') } });
    s.chunk({ missing: doc('deliveries/b') });
    s.chunk({});
    s.end();
    expect(totalOps(m.byCollection)).toEqual({ reads: 2, writes: 0, deletes: 0 });
  });

  it('bills a query one read per document, and one when it finds none', () => {
    const m = new FirestoreMeter();
    const found = m.stream('runQuery', { parent: ROOT, structuredQuery: { from: [{ collectionId: 'deliveries' }] } });
    found.chunk({ document: { name: doc('deliveries/a') } });
    found.chunk({ document: { name: doc('deliveries/b') } });
    found.end();
    const none = m.stream('runQuery', { parent: ROOT, structuredQuery: { from: [{ collectionId: 'intake' }] } });
    none.chunk({});
    none.end();
    const sub = m.stream('runQuery', { parent: doc('accounts/a1'), structuredQuery: { from: [{ collectionId: 'keys' }] } });
    sub.end();
    expect(m.byCollection).toEqual({ deliveries: { reads: 2, writes: 0, deletes: 0 }, intake: { reads: 1, writes: 0, deletes: 0 }, 'accounts/keys': { reads: 1, writes: 0, deletes: 0 } });
  });

  it('bills a count one read per 1,000 entries, at least one', () => {
    const m = new FirestoreMeter();
    const count = (n: number | string) => {
      const s = m.stream('runAggregationQuery', { parent: ROOT, structuredAggregationQuery: { structuredQuery: { from: [{ collectionId: 'deliveries' }] } } });
      s.chunk({ result: { aggregateFields: { count: { integerValue: n } } } });
      s.end();
    };
    count(0);
    expect(m.byCollection.deliveries?.reads).toBe(1);
    count('2500');
    expect(m.byCollection.deliveries?.reads).toBe(4);
    count(1000);
    expect(m.byCollection.deliveries?.reads).toBe(5);
  });

  it('bills a count with a sum beside it by the count, not by the sum', () => {
    const m = new FirestoreMeter();
    const s = m.stream('runAggregationQuery', {
      parent: ROOT,
      structuredAggregationQuery: { structuredQuery: { from: [{ collectionId: 'deliveries' }] }, aggregations: [{ alias: 'count', count: {} }, { alias: 'sum', sum: {} }] },
    });
    s.chunk({ result: { aggregateFields: { count: { integerValue: 2500 }, sum: { integerValue: '8589934590' } } } });
    s.end();
    expect(m.byCollection.deliveries?.reads).toBe(3);
  });
});

describe('per-collection figures', () => {
  it('subtracts snapshots, divides by events and lays out one row per collection with a total', () => {
    const before = { deliveries: { reads: 1, writes: 1, deletes: 0 } };
    const after = { deliveries: { reads: 3, writes: 5, deletes: 0 }, rates: { reads: 0, writes: 2, deletes: 0 }, intake: { reads: 0, writes: 0, deletes: 0 } };
    const d = opsDelta(after, before);
    expect(d).toEqual({ deliveries: { reads: 2, writes: 4, deletes: 0 }, rates: { reads: 0, writes: 2, deletes: 0 } });
    const { header, rows } = collectionTable([{ name: 'run', perEvent: perEvent(d, 4) }]);
    expect(header).toEqual(['Firestore per event: reads / writes / deletes', 'run']);
    expect(rows).toEqual([
      ['deliveries — delivery records of their own (retries, queued, dead)', '0.50 / 1.00 / 0'],
      ['rates — success-rate counters', '0 / 0.50 / 0'],
      ['ALL', '0.50 / 1.50 / 0'],
    ]);
  });
});
