import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { COLLECTIONS, FIRESTORE_INCREASING_FIELDS, FIRESTORE_QUERIES, FIRESTORE_TTL_FIELDS, FIRESTORE_UNINDEXED_FIELDS, isIndexExempt } from '../../shared/firestore-schema';
import { compositeIndexes, QuerySpec } from '../../infra/firestore-plan';
import { intakeBatchId } from '../../shared/domain/intake/intake';
import { GRPC, grpcCode, grpcName } from '../../shared/domain/retry/grpc-status';

/**
 * The Firestore schema is plain data at the bottom of the house: the Pulumi program and the
 * stores both stand on it, and it stands on nothing. gRPC status codes have one table.
 */

const ROOT = path.resolve(__dirname, '../..');

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return name === 'node_modules' ? [] : tsFiles(full);
    return name.endsWith('.ts') ? [full] : [];
  });
}

const importsOf = (file: string) => [...readFileSync(file, 'utf8').matchAll(/^(?:import|export)[^;]*?from '([^']+)'/gms)].map((m) => m[1]!);

test('shared/firestore-schema.ts imports nothing: neither the Firestore client nor an adapter', () => {
  expect(importsOf(path.join(ROOT, 'shared/firestore-schema.ts'))).toEqual([]);
});

test('infra/ takes the schema from shared/firestore-schema.ts, never from an adapter', () => {
  const infra = tsFiles(path.join(ROOT, 'infra'));
  const fromAdapters = infra.flatMap((f) => importsOf(f).filter((i) => i.includes('/adapters/')).map((i) => `${path.relative(ROOT, f)}: ${i}`));
  expect(fromAdapters).toEqual([]);
  expect(importsOf(path.join(ROOT, 'infra/index.ts'))).toContain('../shared/firestore-schema');
});

test('every query, TTL field and unindexed field names a collection of COLLECTIONS', () => {
  const collections = new Set<string>(Object.values(COLLECTIONS));
  for (const spec of [...Object.values(FIRESTORE_QUERIES), ...Object.values(FIRESTORE_TTL_FIELDS), ...FIRESTORE_UNINDEXED_FIELDS, ...FIRESTORE_INCREASING_FIELDS]) expect(collections).toContain(spec.collection);
});

describe('index exemptions for fields whose values only grow', () => {
  const exempt = [...FIRESTORE_UNINDEXED_FIELDS, ...FIRESTORE_INCREASING_FIELDS];
  const key = (f: { collection: string; field: string }) => `${f.collection}.${f.field}`;
  const isExempt = isIndexExempt;

  test('no query served by a single-field index (one field, no array) names an exempt field', () => {
    const queries: [string, QuerySpec][] = Object.entries(FIRESTORE_QUERIES);
    const singleField = queries.filter(([, q]) => new Set([...q.equality, q.orderBy]).size === 1 && q.contains === undefined);
    expect(singleField.map(([name]) => name)).toEqual(expect.arrayContaining(['sharedRatesSince', 'dueIntake', 'owedDeadLetters', 'destinationChanges', 'recentReplays']));
    const broken = singleField.filter(([, q]) => isExempt(q.collection, q.orderBy)).map(([name, q]) => `${name}: ${q.collection}.${q.orderBy}`);
    expect(broken).toEqual([]);
    // An array-contains filter needs the field's automatic array index.
    const arrays = queries.filter(([, q]) => q.contains !== undefined && isExempt(q.collection, q.contains)).map(([name]) => name);
    expect(arrays).toEqual([]);
  });

  test('the queries that order on an exempt field keep their composite index', () => {
    const indexed = compositeIndexes(FIRESTORE_QUERIES).map((i) => `${i.collection}:${[...(i.contains !== undefined ? [i.contains] : []), ...i.fields].join(',')}`);
    for (const [name, q] of Object.entries(FIRESTORE_QUERIES) as [string, QuerySpec][]) {
      if (!isExempt(q.collection, q.orderBy) && !q.equality.some((f) => isExempt(q.collection, f))) continue;
      const fields = [...(q.contains !== undefined ? [q.contains] : []), ...new Set([...q.equality, q.orderBy])];
      expect({ name, index: indexed.includes(`${q.collection}:${fields.join(',')}`) }).toEqual({ name, index: true });
    }
  });

  test('each is declared once, says why it grows, and is no TTL field (that one carries its own exemption)', () => {
    expect(new Set(exempt.map(key)).size).toBe(exempt.length);
    for (const f of FIRESTORE_INCREASING_FIELDS) expect(f.why.length).toBeGreaterThan(3);
    const ttl = new Set(Object.values(FIRESTORE_TTL_FIELDS).map(key));
    expect(exempt.map(key).filter((k) => ttl.has(k))).toEqual([]);
    expect(exempt.map(key)).toEqual(expect.arrayContaining(['deliveries.intake', 'deliveries.publishedAt', 'deliveries.availableAt']));
  });

  test('intake batch ids, exempt on delivery records, sort by the time they were accepted', () => {
    const ids = [1_700_000_000_000, 1_700_000_000_001, 1_800_000_000_000].map((t, i) => intakeBatchId(new Date(t), ['zz', 'aa', 'mm'][i]!));
    expect([...ids].sort()).toEqual(ids);
  });
});

test('gRPC status codes are defined once: no other product file gives a code a name of its own', () => {
  const named = /\b(?:GRPC_)?(?:NOT_FOUND|ALREADY_EXISTS|ABORTED|DEADLINE_EXCEEDED|FAILED_PRECONDITION|PERMISSION_DENIED|UNAVAILABLE)\b\s*[:=]\s*\d+/;
  const product = ['shared', 'functions', 'infra'].flatMap((d) => tsFiles(path.join(ROOT, d)));
  const elsewhere = product.filter((f) => !f.endsWith(path.join('shared', 'domain', 'retry', 'grpc-status.ts')) && named.test(readFileSync(f, 'utf8'))).map((f) => path.relative(ROOT, f));
  expect(elsewhere).toEqual([]);
  expect(GRPC.ALREADY_EXISTS).toBe(6);
  expect(grpcName(GRPC.ALREADY_EXISTS)).toBe('ALREADY_EXISTS');
  expect(grpcName(99)).toBe('UNKNOWN');
  expect(grpcCode({ code: 5 })).toBe(5);
  expect(grpcCode({ code: 'NOT_FOUND' })).toBeUndefined();
  expect(grpcCode(undefined)).toBeUndefined();
});
