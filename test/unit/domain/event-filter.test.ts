import { compileFilter, CompiledFilter, FilterInput, MAX_COMPREHENSIONS, MAX_FILTER_CHARS } from '../../../shared/domain/destinations/event-filter';
import { destinationSpecSchema } from '../../../shared/domain/destinations/destination';
import { HeraldEvent } from '../../../shared/domain/events/event';
import { DestinationFilters } from '../../../shared/app/destinations/destination-filters';
import type { Destination } from '../../../shared/domain/destinations/destination';

function event(data: unknown, extensions: Record<string, string> = {}, raw?: Buffer): HeraldEvent {
  return { attributes: { specversion: '1.0', id: 'e1', source: '/shop', type: 'order.created', ...extensions }, data: raw ?? Buffer.from(JSON.stringify(data)) };
}

function compiled(source: string): CompiledFilter {
  const c = compileFilter(source);
  if (!c.ok) throw new Error(`does not compile: ${c.problem.message}`);
  return c.filter;
}

const order = { amount: 1500, currency: 'EUR', site: 42, customer: { name: 'Acme GmbH', tier: 'gold' }, items: [{ sku: 'a', qty: 2 }, { sku: 'b', qty: 30 }] };
const passes = (source: string, e: HeraldEvent) => compiled(source).evaluate(new FilterInput(e));

describe('a filter over data and ce', () => {
  it.each([
    ['data.amount > 1000', true],
    ['data.amount > 1000.0 && data.amount <= 1500', true],
    ['data.amount > 2000', false],
    ['data.customer.name.startsWith("Acme")', true],
    ['data.customer.name.startsWith("Bolt")', false],
    ['data.site in [41, 42]', true],
    ['data.customer.tier in ["silver", "bronze"]', false],
    ['data.customer.tier == "gold"', true],
    ['has(data.customer.tier)', true],
    ['has(data.customer.vip)', false],
    ['data.items.exists(i, i.qty > 10)', true],
    ['data.items.all(i, i.qty > 10)', false],
    ['size(data.items) == 2', true],
    ['ce.type.startsWith("order.") && ce.source == "/shop"', true],
  ])('%s → %s', (source, expected) => {
    expect(passes(source, event(order))).toEqual({ pass: expected });
  });

  it('reads an extension attribute, and a missing one is an error (has() asks without one)', () => {
    expect(passes('ce.siteid == "42"', event(order, { siteid: '42' }))).toEqual({ pass: true });
    expect(passes('ce.siteid == "42"', event(order, { siteid: '7' }))).toEqual({ pass: false });
    expect(passes('ce.siteid == "42"', event(order))).toEqual({ pass: false, error: expect.stringContaining('siteid') });
    expect(passes('has(ce.siteid) && ce.siteid == "42"', event(order))).toEqual({ pass: false });
  });

  it('an evaluation error (a missing field, a type error) is a verdict that drops, never a throw', () => {
    expect(passes('data.missing > 1', event(order))).toEqual({ pass: false, error: expect.stringContaining('missing') });
    expect(passes('data.customer.name > 3', event(order))).toEqual({ pass: false, error: expect.stringMatching(/overload/) });
    // dyn that turns out not to be a bool
    expect(passes('data.amount', event(order))).toEqual({ pass: false, error: 'the filter gave number, not a bool' });
  });

  it('data that is not JSON is absent: a filter on ce still runs, one on data errs', () => {
    const binary = event(undefined, { datacontenttype: 'application/octet-stream' }, Buffer.from([1, 2, 3]));
    expect(passes('ce.type == "order.created"', binary)).toEqual({ pass: true });
    expect(passes('data.amount > 1', binary).pass).toBe(false);
    expect(passes('data.amount > 1', binary)).toHaveProperty('error');
    const json = event(undefined, { datacontenttype: 'application/cloudevents+json; charset=utf-8' }, Buffer.from('{"amount": 5}'));
    expect(passes('data.amount == 5', json)).toEqual({ pass: true });
  });
});

describe('checked when compiled', () => {
  it('an invalid expression names its position and the problem', () => {
    const c = compileFilter('data.amount >');
    expect(c).toEqual({ ok: false, problem: { offset: 13, line: 1, column: 14, message: expect.stringMatching(/unexpected/i) } });
    const multi = compileFilter('data.amount > 1 &&\n  data.x ==');
    expect(multi.ok).toBe(false);
    if (!multi.ok) expect([multi.problem.line, multi.problem.column]).toEqual([2, 12]);
  });

  it('a type error on a known attribute is refused (every ce value is a string)', () => {
    const c = compileFilter('ce.type > 1');
    expect(c).toEqual({ ok: false, problem: expect.objectContaining({ offset: 0, message: expect.stringContaining('no such overload') }) });
  });

  it('a filter must give a bool', () => {
    expect(compileFilter('1 + 2')).toEqual({ ok: false, problem: expect.objectContaining({ message: expect.stringContaining('gives int') }) });
  });

  it('refuses what would cost too much: nesting, size, nested or many comprehensions, length', () => {
    const deep = `${'('.repeat(30)}data.a${')'.repeat(30)} == 1`;
    expect(compileFilter(deep)).toEqual({ ok: false, problem: expect.objectContaining({ message: expect.stringContaining('levels of nesting') }) });
    const wide = Array.from({ length: 120 }, (_, i) => `data.a == ${i}`).join(' || ');
    expect(compileFilter(wide)).toEqual({ ok: false, problem: expect.objectContaining({ message: expect.stringContaining('too large') }) });
    const nested = compileFilter('data.items.exists(i, data.items.exists(j, i.qty < j.qty))');
    expect(nested).toEqual({ ok: false, problem: expect.objectContaining({ offset: 21, message: expect.stringContaining('inside another comprehension') }) });
    const many = Array.from({ length: MAX_COMPREHENSIONS + 1 }, () => 'data.items.exists(i, i.qty > 1)').join(' && ');
    expect(compileFilter(many)).toEqual({ ok: false, problem: expect.objectContaining({ message: expect.stringContaining(`more than ${MAX_COMPREHENSIONS} comprehensions`) }) });
    expect(compileFilter(`data.s == "${'x'.repeat(MAX_FILTER_CHARS)}"`).ok).toBe(false);
  });

  it('the destination spec refuses an invalid filter with its position, and takes a valid one', () => {
    const bad = destinationSpecSchema.safeParse({ url: 'https://example.com/hook', filter: 'data.amount >' });
    expect(bad.success).toBe(false);
    expect(bad.error?.issues[0]).toMatchObject({ path: ['filter'], message: expect.stringContaining('at line 1, column 14') });
    expect(destinationSpecSchema.safeParse({ url: 'https://example.com/hook', filter: 'data.amount > 1000' }).success).toBe(true);
  });
});

describe('DestinationFilters', () => {
  const dest = (id: string, filter?: string) => ({ id, eventTypes: ['order.created'], createdAt: '', ...(filter ? { filter } : {}) }) as unknown as Destination;

  it('keeps the destinations whose filter takes the event and counts each filtering one', () => {
    const counted: [string, object][] = [];
    const filters = new DestinationFilters({ tally: { filterCounted: (id, c) => counted.push([id, c]) }, clock: { now: () => new Date(0) }, log: { debug: () => undefined } as never });
    const targets = [dest('a'), dest('b', 'data.amount > 1000'), dest('c', 'data.amount > 5000'), dest('d', 'data.nothing == 1')];
    expect(filters.sift(targets, event(order)).map((d) => d.id)).toEqual(['a', 'b']);
    expect(counted).toEqual([
      ['b', { filterPassed: 1 }],
      ['c', { filtered: 1 }],
      ['d', { filterErrors: 1 }],
    ]);
  });

  it('hands back the same array when no destination filters (nothing counted, nothing parsed)', () => {
    const targets = [dest('a'), dest('b')];
    expect(new DestinationFilters().sift(targets, event(order))).toBe(targets);
  });

  it('a stored filter that no longer compiles drops every event as an error', () => {
    const filters = new DestinationFilters();
    expect(filters.judge('data.amount >', event(order))).toEqual({ pass: false, error: expect.stringContaining('does not compile') });
  });
});
