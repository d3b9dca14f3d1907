import { Environment } from '@marcbachmann/cel-js';
import type { HeraldEvent } from '../events/event';

/**
 * A destination's `filter`: a CEL expression (https://cel.dev) over `ce`, the event's context
 * attributes (extensions included, every value a string, as Herald holds them), and `data`, the
 * event's data parsed as JSON (absent when it is not JSON: an expression that reads it then
 * errs). Checked once when a destination is saved, compiled once per expression text where
 * events are routed, evaluated per event in well under 10 µs.
 *
 * Bounded so that no filter can stall ingest: the text's length, its syntax tree's size and
 * depth, and comprehensions (`all`, `exists`, `exists_one`, `map`, `filter`): at most a few,
 * never one inside another, so an evaluation is linear in the event's size.
 */

export const MAX_FILTER_CHARS = 2048;
export const FILTER_LIMITS = { maxAstNodes: 256, maxDepth: 24, maxListElements: 100, maxMapEntries: 50, maxCallArguments: 8 } as const;
export const MAX_COMPREHENSIONS = 3;
const COMPREHENSIONS = new Set(['all', 'exists', 'exists_one', 'map', 'filter']);

// One environment for every filter: its declarations are the same for all.
const environment = new Environment({ homogeneousAggregateLiterals: false, limits: FILTER_LIMITS }).registerVariable('ce', 'map<string, string>').registerVariable('data', 'dyn');

/** What is wrong with a filter and where: `offset` counts characters from 0; `line` and `column` from 1. */
export interface FilterProblem {
  message: string;
  offset: number;
  line: number;
  column: number;
}

export type FilterVerdict = { pass: true } | { pass: false; error?: string };

/** A filter ready to run: pure, so one compiled text serves every destination that has it. */
export interface CompiledFilter {
  readonly source: string;
  evaluate(input: FilterInput): FilterVerdict;
}

export type CompiledOrProblem = { ok: true; filter: CompiledFilter } | { ok: false; problem: FilterProblem };

interface CelError {
  summary?: string;
  message: string;
  range?: { start: number; end: number };
}

/** Parsed, bounded and type-checked (the result must be a bool); a problem names its position. */
export function compileFilter(source: string): CompiledOrProblem {
  if (source.trim() === '') return problem(source, 0, 'the filter is empty: leave filter out to take every event of the destination\'s eventTypes');
  if (source.length > MAX_FILTER_CHARS) return problem(source, MAX_FILTER_CHARS, `the filter is ${source.length} characters long; at most ${MAX_FILTER_CHARS}`);
  let program: ReturnType<Environment['parse']>;
  try {
    program = environment.parse(source);
  } catch (e) {
    return problemOf(source, e as CelError);
  }
  const overCost = comprehensionProblem(program.ast as AstNode);
  if (overCost) return problem(source, overCost.offset, overCost.message);
  const checked = program.check();
  if (!checked.valid) return problemOf(source, checked.error as unknown as CelError);
  if (checked.type !== 'bool' && checked.type !== 'dyn') return problem(source, 0, `the filter must give a bool (true: the event goes to the destination); this one gives ${checked.type}`);
  const evaluate = (input: FilterInput): FilterVerdict => {
    try {
      const result: unknown = program(input.context);
      if (result === true) return { pass: true };
      if (result === false) return { pass: false };
      return { pass: false, error: `the filter gave ${typeof result}, not a bool` };
    } catch (e) {
      return { pass: false, error: (e as CelError).summary ?? (e as Error).message };
    }
  };
  return { ok: true, filter: { source, evaluate } };
}

/**
 * An event as its filters see it, shared by every destination that filters it: `data` parsed
 * once, at the first filter that runs (none runs for an event no filtering destination takes).
 */
export class FilterInput {
  private built?: { ce: Readonly<Record<string, string>>; data?: unknown };

  constructor(private readonly event: HeraldEvent) {}

  get context(): { ce: Readonly<Record<string, string>>; data?: unknown } {
    return (this.built ??= { ce: this.event.attributes, ...jsonData(this.event) });
  }
}

/** `{data}` when the event's data is JSON (by its datacontenttype, absent meaning JSON), else nothing. */
function jsonData(event: HeraldEvent): { data?: unknown } {
  const type = event.attributes.datacontenttype;
  if (event.data.length === 0 || (type !== undefined && !/^[^;]*[/+]json\s*(;|$)/i.test(type))) return {};
  try {
    return { data: JSON.parse(event.data.toString('utf8')) as unknown };
  } catch {
    return {};
  }
}

interface AstNode {
  op: string;
  args: unknown;
  start?: number;
}

/** A comprehension inside another, or more than MAX_COMPREHENSIONS: their cost would grow with the data's square. */
function comprehensionProblem(root: AstNode): { offset: number; message: string } | undefined {
  let count = 0;
  const walk = (node: unknown, inside: boolean): { offset: number; message: string } | undefined => {
    if (Array.isArray(node)) {
      for (const n of node) {
        const found = walk(n, inside);
        if (found) return found;
      }
      return undefined;
    }
    if (node === null || typeof node !== 'object' || !('op' in node)) return undefined;
    const n = node as AstNode;
    const isComprehension = n.op === 'rcall' && Array.isArray(n.args) && COMPREHENSIONS.has(n.args[0] as string);
    if (isComprehension) {
      const offset = n.start ?? 0;
      if (inside) return { offset, message: `${String((n.args as unknown[])[0])}() inside another comprehension: its cost would grow with the square of the data; filter with one level` };
      if (++count > MAX_COMPREHENSIONS) return { offset, message: `more than ${MAX_COMPREHENSIONS} comprehensions (all, exists, exists_one, map, filter) in one filter` };
    }
    return walk(n.args, inside || isComprehension);
  };
  return walk(root, false);
}

function problemOf(source: string, e: CelError): CompiledOrProblem {
  const message = (e.summary ?? e.message.split('\n')[0] ?? 'invalid filter').replace(/^Exceeded (\w+) \((\d+)\)$/, (_, limit: string, n: string) => `the filter is too large: over ${n} ${LIMIT_WORDS[limit] ?? limit}`);
  return problem(source, e.range?.start ?? 0, message);
}

const LIMIT_WORDS: Record<string, string> = {
  maxAstNodes: 'terms',
  maxDepth: 'levels of nesting',
  maxListElements: 'list elements',
  maxMapEntries: 'map entries',
  maxCallArguments: 'arguments to one call',
};

function problem(source: string, offset: number, message: string): CompiledOrProblem {
  const before = source.slice(0, offset).split('\n');
  return { ok: false, problem: { message, offset, line: before.length, column: before[before.length - 1]!.length + 1 } };
}

/** "at line 1, column 9: …": a problem as one line of an answer's issue. */
export function describeFilterProblem(p: FilterProblem): string {
  return `at line ${p.line}, column ${p.column} (offset ${p.offset}): ${p.message}`;
}
