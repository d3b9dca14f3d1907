import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

/**
 * The product code reads from the bottom up, and the applications sit apart from the library:
 * - no module imports, directly or not, a module that imports it back. A cycle makes the
 *   load order decide what a module sees at its top level (a schema built from another
 *   module's constant is undefined on one side of the loop);
 * - only apps/ itself (and test/) imports apps/: the CLI and local mode are
 *   built on the library, never the other way round, and no function deploys them;
 * - what the console bundles for the browser from shared/ imports no package and no Node
 *   module, and the console keeps no copy of a list the domain holds.
 */

const ROOT = path.resolve(__dirname, '../../..');
const TREE = ['shared', 'apps', 'functions', 'infra', 'console/src'];

interface Import {
  /** The specifier as written: `./ids`, `zod`, `node:crypto`. */
  spec: string;
  /** The file a relative specifier names, relative to ROOT; undefined for a package. */
  file?: string;
  /** `import type` / `export type`: erased, nothing of it is loaded or bundled. */
  typeOnly: boolean;
}

function sourcesUnder(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir)).flatMap((name) => {
    const rel = path.posix.join(dir, name);
    if (statSync(path.join(ROOT, rel)).isDirectory()) return sourcesUnder(rel);
    return /\.tsx?$/.test(name) && !name.endsWith('.d.ts') ? [rel] : [];
  });
}

function resolved(from: string, spec: string): string | undefined {
  const base = path.posix.join(path.posix.dirname(from), spec);
  return [`${base}.ts`, `${base}.tsx`, `${base}/index.ts`, base].find((f) => existsSync(path.join(ROOT, f)) && statSync(path.join(ROOT, f)).isFile());
}

/** Static imports and re-exports (`import … from`, `export … from`, `import '…'`) and `import('…')`. */
function importsOf(file: string): Import[] {
  const text = readFileSync(path.join(ROOT, file), 'utf8');
  const found = [
    ...[...text.matchAll(/^\s*(?:import|export)\b(\s+type\b)?[^;'"]*?\bfrom\s+'([^']+)'/gm)].map((m) => ({ spec: m[2]!, typeOnly: m[1] !== undefined })),
    ...[...text.matchAll(/^\s*import\s+'([^']+)'/gm)].map((m) => ({ spec: m[1]!, typeOnly: false })),
    ...[...text.matchAll(/\bimport\(\s*'([^']+)'\s*\)/g)].map((m) => ({ spec: m[1]!, typeOnly: false })),
  ];
  return found.map(({ spec, typeOnly }) => {
    if (!spec.startsWith('.')) return { spec, typeOnly };
    const target = resolved(file, spec);
    if (target === undefined) throw new Error(`${file} imports ${spec}, which is not a file`);
    return { spec, file: target, typeOnly };
  });
}

function cyclesIn(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const cycles: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (node: string) => {
    state.set(node, 'open');
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === 'open') cycles.push([...stack.slice(stack.indexOf(next)), next]);
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(node, 'done');
  };
  for (const node of graph.keys()) if (!state.has(node)) visit(node);
  return cycles;
}

const files = TREE.flatMap(sourcesUnder);
const imports = new Map(files.map((f) => [f, importsOf(f)]));
/** Type-only imports count: a loop through types is still two modules that cannot be read apart. */
const graph = new Map([...imports].map(([f, list]) => [f, list.flatMap((i) => (i.file === undefined ? [] : [i.file]))]));
const isApp = (f: string) => f.startsWith('apps/');

test('the cycle finder finds a loop, and no loop where there is none', () => {
  expect(cyclesIn(new Map([['a', ['b']], ['b', ['c']], ['c', ['a']]]))).toEqual([['a', 'b', 'c', 'a']]);
  expect(cyclesIn(new Map([['a', ['b', 'c']], ['b', ['c']], ['c', []]]))).toEqual([]);
});

test('the import reader sees every kind of import, type-only ones marked', () => {
  expect(graph.get('shared/domain/destinations/destination.ts')).toContain('shared/domain/ids.ts');
  // Local mode loads the functions with import(), and the library statically.
  expect(graph.get('apps/local/stack.ts')?.filter((f) => f.startsWith('functions/'))).not.toEqual([]);
  expect(graph.get('apps/local/stack.ts')?.filter((f) => f.startsWith('shared/app/'))).not.toEqual([]);
  expect(imports.get('console/src/types.ts')).toContainEqual({ spec: '../../shared/domain/retry/delivery', file: 'shared/domain/retry/delivery.ts', typeOnly: true });
  expect(files).toEqual(expect.arrayContaining(['infra/index.ts', 'functions/index.ts', 'console/src/main.tsx']));
});

test('no import cycle in shared/, functions/, infra/ or console/src/', () => {
  expect(cyclesIn(graph).map((cycle) => cycle.join(' → '))).toEqual([]);
});

test('only apps/ imports apps/: the library, functions/, infra/ and the console do not', () => {
  const intoApps = files.filter((f) => !isApp(f)).flatMap((f) => (graph.get(f) ?? []).filter(isApp).map((to) => `${f} → ${to}`));
  expect(intoApps).toEqual([]);
  expect(files.filter(isApp)).toEqual(expect.arrayContaining(['apps/cli/main.ts', 'apps/local/main.ts']));
});

/**
 * The library is cut by concern (docs/architecture.md "Where things are"): within shared/app/ and
 * shared/domain/, one folder per concern. The folders stack: one imports only those below it, so
 * a concern can be read with what it stands on and nothing above it.
 */
describe('concern folders', () => {
  const folderOf = (layer: string, f: string): string | undefined => {
    if (!f.startsWith(`${layer}/`)) return undefined;
    const rest = f.slice(layer.length + 1);
    return rest.includes('/') ? rest.slice(0, rest.indexOf('/')) : undefined;
  };

  test.each(['shared/app', 'shared/domain', 'shared/adapters'])('the folders of %s import each other in no loop', (layer) => {
    const between = new Map<string, string[]>();
    for (const f of files) {
      const from = folderOf(layer, f);
      if (from === undefined) continue;
      for (const to of (graph.get(f) ?? []).map((t) => folderOf(layer, t))) {
        if (to !== undefined && to !== from && !(between.get(from) ?? []).includes(to)) between.set(from, [...(between.get(from) ?? []), to]);
      }
    }
    expect(between.size).toBeGreaterThan(0);
    expect(cyclesIn(between).map((cycle) => cycle.join(' → '))).toEqual([]);
  });

  test('no folder of product code holds more than 15 files', () => {
    const counts = new Map<string, number>();
    for (const f of files.filter((f) => !f.startsWith('console/'))) counts.set(path.posix.dirname(f), (counts.get(path.posix.dirname(f)) ?? 0) + 1);
    expect([...counts].filter(([, n]) => n > 15).map(([dir, n]) => `${dir}: ${n} files`)).toEqual([]);
  });
});

describe('the console and the domain', () => {
  const consoleFiles = files.filter((f) => f.startsWith('console/src/'));
  /** What the console bundles from outside console/: value imports, and everything they import in turn. */
  const bundledFromShared = (() => {
    const seen = new Set<string>();
    const visit = (f: string) => {
      if (seen.has(f)) return;
      seen.add(f);
      for (const i of imports.get(f) ?? []) if (!i.typeOnly && i.file !== undefined) visit(i.file);
    };
    for (const f of consoleFiles) for (const i of imports.get(f) ?? []) if (!i.typeOnly && i.file !== undefined && !i.file.startsWith('console/')) visit(i.file);
    return [...seen].sort();
  })();

  test('the modules it bundles from shared/ are browser-safe: domain modules importing no package and no Node module', () => {
    expect(bundledFromShared).toEqual(expect.arrayContaining(['shared/domain/modes/batch-limits.ts', 'shared/domain/delivery-statuses.ts', 'shared/domain/retry/policy-preset-names.ts']));
    expect(bundledFromShared.filter((f) => !f.startsWith('shared/domain/'))).toEqual([]);
    const packages = bundledFromShared.flatMap((f) => (imports.get(f) ?? []).filter((i) => !i.typeOnly && i.file === undefined).map((i) => `${f} → ${i.spec}`));
    expect(packages).toEqual([]);
  });

  test.each([
    ['DELIVERY_STATUSES', 'shared/domain/delivery-statuses.ts'],
    ['POLICY_PRESET_NAMES', 'shared/domain/retry/policy-preset-names.ts'],
  ])('it keeps no copy of %s (%s): it imports the list', (name, file) => {
    const list = new RegExp(`export const ${name} = \\[([^\\]]*)\\]`).exec(readFileSync(path.join(ROOT, file), 'utf8'));
    const members = [...(list?.[1] ?? '').matchAll(/'([^']+)'/g)].map((m) => m[1]!);
    expect(members.length).toBeGreaterThan(2);
    // Two members side by side, quoted either way: the start of a copied list.
    const copy = new RegExp(`['"]${members[0]}['"]\\s*,\\s*['"]${members[1]}['"]`);
    expect(consoleFiles.filter((f) => copy.test(readFileSync(path.join(ROOT, f), 'utf8')))).toEqual([]);
  });

  test('it keeps no copy of BATCH_LIMITS (shared/domain/modes/batch-limits.ts): it imports the bounds', () => {
    expect(consoleFiles.filter((f) => (imports.get(f) ?? []).some((i) => i.file === 'shared/domain/modes/batch-limits.ts'))).toEqual(expect.arrayContaining(['console/src/pages/destination-form.tsx']));
    // The largest body, written out or as a product: the bound most likely to be copied.
    expect(consoleFiles.filter((f) => /1_?048_?576|1024\s*\*\s*1024/.test(readFileSync(path.join(ROOT, f), 'utf8')))).toEqual([]);
  });
});
