import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * shared/domain reads from the bottom up: no module imports, directly or not, a module that
 * imports it back. A cycle makes the load order decide what a module sees at its top level
 * (a schema built from another module's constant is undefined on one side of the loop).
 */

const DOMAIN = path.resolve(__dirname, '../../../shared/domain');

function importsOf(file: string): string[] {
  const text = readFileSync(path.join(DOMAIN, file), 'utf8');
  return [...text.matchAll(/^(?:import|export)[^;]*?from '\.\/([\w-]+)'/gms)].map((m) => `${m[1]}.ts`);
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

test('the cycle finder finds a loop, and no loop where there is none', () => {
  expect(cyclesIn(new Map([['a', ['b']], ['b', ['c']], ['c', ['a']]]))).toEqual([['a', 'b', 'c', 'a']]);
  expect(cyclesIn(new Map([['a', ['b', 'c']], ['b', ['c']], ['c', []]]))).toEqual([]);
});

test('shared/domain has no import cycle', () => {
  const files = readdirSync(DOMAIN).filter((f) => f.endsWith('.ts'));
  const graph = new Map(files.map((f) => [f, importsOf(f)]));
  expect(cyclesIn(graph)).toEqual([]);
  expect(graph.get('destination.ts')).toContain('ids.ts');
});
