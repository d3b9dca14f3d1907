/**
 * Comparing and measuring values as JSON without writing them out: a group commit compares
 * and weighs a hundred members that share their attempt's detail (the same object), and
 * writing each out would cost more than the rest of the commit.
 */

/**
 * Whether two JSON values are equal. A batch's members hold the one attempt's detail (the same
 * object): compared by reference first, a hundred members cost no more than one.
 */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null || Array.isArray(a) !== Array.isArray(b)) return false;
  // A Buffer, a Date or a Timestamp: as JSON (a DELIVERED record holds none; older paths might).
  if (!isPlain(a) || !isPlain(b)) return JSON.stringify(a) === JSON.stringify(b);
  if (Array.isArray(a)) return a.length === (b as unknown[]).length && a.every((v, i) => sameJson(v, (b as unknown[])[i]));
  const [ka, kb] = [Object.keys(a), Object.keys(b)];
  return ka.length === kb.length && ka.every((k) => k in b && sameJson((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

function isPlain(value: object): boolean {
  const proto: unknown = Object.getPrototypeOf(value);
  return Array.isArray(value) || proto === Object.prototype || proto === null;
}

/** Objects already measured (a Set, a WeakSet, or a view over one). */
export interface Counted {
  has(value: object): boolean;
  add(value: object): unknown;
}

/**
 * A value's length as JSON, give or take a separator per field. With `counted`, an object met
 * there before counts nothing, and each one measured is added: what a value adds to others
 * when what they share (a batch's attempt detail, the same object) is stored once.
 */
export function jsonBytes(value: unknown, counted?: Counted): number {
  if (typeof value !== 'object' || value === null) return value === undefined ? 0 : (JSON.stringify(value)?.length ?? 0);
  if (counted?.has(value)) return 0;
  counted?.add(value);
  if (!isPlain(value)) return JSON.stringify(value).length;
  if (Array.isArray(value)) return 2 + value.reduce((n: number, v) => n + jsonBytes(v, counted) + 1, 0);
  return 2 + Object.entries(value).reduce((n, [k, v]) => (v === undefined ? n : n + k.length + 4 + jsonBytes(v, counted)), 0);
}
