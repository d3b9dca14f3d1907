/**
 * The CEL behaviours Herald's filters rely on, each checked against what the CEL language
 * definition (https://github.com/google/cel-spec/blob/master/doc/langdef.md) says. The
 * package (@marcbachmann/cel-js) ships no conformance data (its npm tarball holds only lib/, and
 * its own tests are hand-written, not cel-spec's simple/testdata/*.textproto), so this table
 * stands in for the part of the conformance suite filters use: a release of the package that
 * changes one of these fails here before it changes what a destination receives.
 */
import { compileFilter, FilterInput, FilterVerdict } from '../../../shared/domain/destinations/event-filter';
import { DestinationFilters } from '../../../shared/app/destinations/destination-filters';
import type { Destination } from '../../../shared/domain/destinations/destination';
import type { HeraldEvent } from '../../../shared/domain/events/event';

const DATA = { amount: 1500, ratio: 0.5, count: 3, tier: 'gold', nothing: null, customer: { name: 'Acme GmbH', vip: false }, items: [1, 2.5, 'x'], tags: { eu: true } };
const EVENT: HeraldEvent = { attributes: { specversion: '1.0', id: 'e1', source: '/shop', type: 'com.example.order.created', siteid: '42' }, data: Buffer.from(JSON.stringify(DATA)) };

type Expected = 'pass' | 'drop' | 'error' | 'refused';

function outcome(source: string): Expected {
  const compiled = compileFilter(source);
  if (!compiled.ok) return 'refused';
  const verdict: FilterVerdict = compiled.filter.evaluate(new FilterInput(EVENT));
  if (verdict.pass) return 'pass';
  return verdict.error === undefined ? 'drop' : 'error';
}

// [langdef section, expression, expected]: `error` is an evaluation error (routing drops the event and counts it), `refused` a type-check error when saved.
const TABLE: [string, string, Expected][] = [
  // has(): a field's presence, never its value; a missing parent is an error (langdef "Macros": has(e.f) tests e's field f).
  ['has: a present field', 'has(data.customer.vip)', 'pass'],
  ['has: a present field whose value is false', 'has(data.customer.vip) && !data.customer.vip', 'pass'],
  ['has: a present field whose value is null', 'has(data.nothing)', 'pass'],
  ['has: an absent field', 'has(data.customer.email)', 'drop'],
  ['has: an absent extension attribute', 'has(ce.region)', 'drop'],
  ['has: a field of an absent field is an error', 'has(data.shipping.country)', 'error'],
  // in: list membership with heterogeneous equality, map key membership (langdef "Lists and maps", "Equality").
  ['in: a string in a list literal', 'data.tier in ["gold", "silver"]', 'pass'],
  ['in: a string not in the list', 'data.tier in ["silver", "bronze"]', 'drop'],
  ['in: an int literal found as the JSON number (a double) it equals', '1 in data.items', 'pass'],
  ['in: a double in a mixed list', '2.5 in data.items', 'pass'],
  ['in: a value of another type is not in it, no error', '"1" in data.items', 'drop'],
  ['in: a key of a map', '"eu" in data.tags', 'pass'],
  ['in: a missing key of a map', '"us" in data.tags', 'drop'],
  ['in: on an extension attribute', 'ce.siteid in ["41", "42"]', 'pass'],
  // String functions (langdef "Standard definitions"): case-sensitive.
  ['startsWith', 'data.customer.name.startsWith("Acme")', 'pass'],
  ['startsWith is case-sensitive', 'data.customer.name.startsWith("acme")', 'drop'],
  ['startsWith on ce', 'ce.type.startsWith("com.example.")', 'pass'],
  ['endsWith', 'data.customer.name.endsWith("GmbH")', 'pass'],
  ['contains', 'data.customer.name.contains("me G")', 'pass'],
  ['matches (RE2)', 'data.customer.name.matches("^Acme\\\\s")', 'pass'],
  ['startsWith with an int argument is refused', 'ce.type.startsWith(1)', 'refused'],
  // Numbers: JSON numbers are doubles; comparisons across int, uint and double order by value (langdef "Numeric values").
  ['int literal against a JSON number: >', 'data.amount > 1000', 'pass'],
  ['int literal against a JSON number: <=', 'data.amount <= 1500', 'pass'],
  ['int literal against a JSON number: ==', 'data.count == 3', 'pass'],
  ['int literal on the left', '3 == data.count', 'pass'],
  ['double literal against a JSON number', 'data.count < 3.5', 'pass'],
  ['a fraction against an int literal', 'data.ratio < 1', 'pass'],
  ['uint literal against a JSON number', 'data.amount > 1000u', 'pass'],
  ['a JSON number is a double', 'type(data.amount) == double', 'pass'],
  ['int(): a double converted', 'int(data.amount) == 1500', 'pass'],
  ['mixed literals are refused by the type check (runtime: dyn)', '1 == 1.0', 'refused'],
  ['dyn() lets mixed literals compare by value', 'dyn(1) == 1.0', 'pass'],
  // Equality across types is false, not an error; ordering across types is an error (langdef "Equality", "Ordering").
  ['== across types is false', 'data.tier == 1', 'drop'],
  ['!= across types is true', 'data.tier != 1', 'pass'],
  ['ordering a string against a number is an error', 'data.tier > 1', 'error'],
  ['null equals null', 'data.nothing == null', 'pass'],
  // Missing fields are errors; && and || absorb an error when the other side decides (langdef "Logical operators").
  ['a missing data field', 'data.missing > 1', 'error'],
  ['a missing extension attribute', 'ce.region == "eu"', 'error'],
  ['a field of null', 'data.nothing.x == 1', 'error'],
  ['an index out of range', 'data.items[5] == 1', 'error'],
  ['error || true is true', 'data.missing > 1 || true', 'pass'],
  ['false && error is false', 'false && data.missing > 1', 'drop'],
  ['error && false is false (commutative)', 'data.missing > 1 && false', 'drop'],
  ['error || false stays an error', 'data.missing > 1 || false', 'error'],
  ['has() guards a missing field', 'has(data.region) && data.region == "eu"', 'drop'],
  // Macros: exists and all; all is an error only when no element makes it false (langdef "Macros").
  ['exists', 'data.items.exists(i, i == "x")', 'pass'],
  ['all over an element that errs and none false', 'data.items.all(i, i > 0)', 'error'],
  ['size of a list', 'size(data.items) == 3', 'pass'],
  // A filter gives a bool: anything else is refused when saved.
  ['a non-bool result is refused', 'data.amount + 1', 'refused'],
];

describe('CEL behaviours filters rely on (langdef; the package ships no conformance data)', () => {
  it.each(TABLE)('%s: %s → %s', (_section, source, expected) => {
    expect(outcome(source)).toBe(expected);
  });

  it('an evaluation error drops the event for that destination alone and is counted as filterErrors', () => {
    const counted: [string, object][] = [];
    const filters = new DestinationFilters({ tally: { filterCounted: (id, c) => counted.push([id, c]) }, clock: { now: () => new Date(0) }, log: { debug: () => undefined } as never });
    const dest = (id: string, filter?: string) => ({ id, eventTypes: [EVENT.attributes.type], createdAt: '', ...(filter ? { filter } : {}) }) as unknown as Destination;
    const kept = filters.sift([dest('plain'), dest('missing', 'data.missing > 1'), dest('guarded', 'has(data.missing) && data.missing > 1'), dest('takes', 'data.amount > 1000')], EVENT);
    expect(kept.map((d) => d.id)).toEqual(['plain', 'takes']);
    expect(counted).toEqual([
      ['missing', { filterErrors: 1 }],
      ['guarded', { filtered: 1 }],
      ['takes', { filterPassed: 1 }],
    ]);
  });
});
