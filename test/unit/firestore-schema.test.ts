import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { COLLECTIONS, FIRESTORE_QUERIES, FIRESTORE_TTL_FIELDS, FIRESTORE_UNINDEXED_FIELDS } from '../../shared/firestore-schema';
import { GRPC, grpcCode, grpcName } from '../../shared/domain/grpc-status';

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
  for (const spec of [...Object.values(FIRESTORE_QUERIES), ...Object.values(FIRESTORE_TTL_FIELDS), ...FIRESTORE_UNINDEXED_FIELDS]) expect(collections).toContain(spec.collection);
});

test('gRPC status codes are defined once: no other product file gives a code a name of its own', () => {
  const named = /\b(?:GRPC_)?(?:NOT_FOUND|ALREADY_EXISTS|ABORTED|DEADLINE_EXCEEDED|FAILED_PRECONDITION|PERMISSION_DENIED|UNAVAILABLE)\b\s*[:=]\s*\d+/;
  const product = ['shared', 'functions', 'infra'].flatMap((d) => tsFiles(path.join(ROOT, d)));
  const elsewhere = product.filter((f) => !f.endsWith(path.join('shared', 'domain', 'grpc-status.ts')) && named.test(readFileSync(f, 'utf8'))).map((f) => path.relative(ROOT, f));
  expect(elsewhere).toEqual([]);
  expect(GRPC.ALREADY_EXISTS).toBe(6);
  expect(grpcName(GRPC.ALREADY_EXISTS)).toBe('ALREADY_EXISTS');
  expect(grpcName(99)).toBe('UNKNOWN');
  expect(grpcCode({ code: 5 })).toBe(5);
  expect(grpcCode({ code: 'NOT_FOUND' })).toBeUndefined();
  expect(grpcCode(undefined)).toBeUndefined();
});
