import { isUtf8 } from 'node:buffer';
import { formatPath, ValidationIssue } from './event';

/**
 * JSON request bodies read strictly: UTF-8 only (RFC 8259 §8.1; a decoder that substitutes
 * U+FFFD would change what the sender meant), nesting bounded before anything recursive
 * (JSON.parse, zod, JSON.stringify, Firestore) sees the value, then JSON.parse, then no lone
 * UTF-16 surrogate in any string or field name.
 */

/** Deeper than any body Herald takes needs (a CloudEvent's data included); 10,000 levels is an attack, not data. */
export const MAX_JSON_DEPTH = 128;

export type JsonBody =
  | { ok: true; value: unknown }
  | { ok: false; problem: 'utf8' | 'depth' | 'syntax'; message: string }
  /** Each string or field name that holds a lone surrogate, by its JSON path. */
  | { ok: false; problem: 'surrogate'; message: string; issues: ValidationIssue[] };

export interface JsonBodyOptions {
  maxDepth?: number;
  /**
   * `allow`: a Pub/Sub push envelope, whose attributes the function judges itself (an invalid
   * event goes to the dead-letter topic; a 400 would have Pub/Sub push it again forever).
   */
  loneSurrogates?: 'refuse' | 'allow';
}

export function parseJsonBytes(bytes: Buffer, options: JsonBodyOptions = {}): JsonBody {
  const maxDepth = options.maxDepth ?? MAX_JSON_DEPTH;
  const invalidAt = firstInvalidUtf8(bytes);
  if (invalidAt !== undefined) {
    return { ok: false, problem: 'utf8', message: `body is not valid UTF-8: invalid byte 0x${bytes[invalidAt]!.toString(16).padStart(2, '0')} at offset ${invalidAt}` };
  }
  const text = bytes.toString('utf8');
  if (exceedsDepth(text, maxDepth)) return { ok: false, problem: 'depth', message: `body is nested more than ${maxDepth} levels deep` };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return { ok: false, problem: 'syntax', message: `body is not valid JSON: ${(e as Error).message}` };
  }
  // Valid UTF-8 holds no surrogate: only a \uD800-\uDFFF escape can make one, so most bodies skip the walk.
  if (options.loneSurrogates !== 'allow' && SURROGATE_ESCAPE.test(text)) {
    const issues = loneSurrogateIssues(value);
    if (issues.length > 0) {
      const where = issues.map((i) => i.path).join(', ');
      return { ok: false, problem: 'surrogate', issues, message: `body holds a lone UTF-16 surrogate at ${where}: ${LONE_SURROGATE_HINT}` };
    }
  }
  return { ok: true, value };
}

// ---------------------------------------------------------------- lone surrogates

/**
 * A high surrogate not followed by a low one, or a low one not preceded by a high one. JSON
 * allows `"\ud800"`, but no UTF-8 (and so no Firestore string, Pub/Sub attribute or HTTP header)
 * can carry it: Firestore fails the write, Pub/Sub retries the publish for a minute.
 */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;
export const LONE_SURROGATE_HINT = 'a \\ud800-\\udfff escape must be half of a pair (e.g. \\ud83d\\ude00); send the pair, or the character itself in UTF-8';

/** Whether a string holds a UTF-16 surrogate standing alone. */
export function hasLoneSurrogate(s: string): boolean {
  return LONE_SURROGATE.test(s);
}

/** The string with every lone surrogate replaced by U+FFFD: what can still be written somewhere that takes only UTF-8. */
export function wellFormed(s: string): string {
  return hasLoneSurrogate(s) ? s.replace(new RegExp(LONE_SURROGATE.source, 'g'), '\ufffd') : s;
}

/** Every string and field name of a parsed JSON value that holds a lone surrogate (the first `max`), by path. */
export function loneSurrogateIssues(value: unknown, prefix: (string | number)[] = [], max = 10): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  const at = (path: (string | number)[]) => formatPath(path) || 'body';
  // Recursion is bounded: the value was parsed from a body no deeper than its maximum depth.
  const walk = (v: unknown, path: (string | number)[]): void => {
    if (issues.length >= max) return;
    if (typeof v === 'string') {
      if (hasLoneSurrogate(v)) issues.push({ path: at(path), message: 'holds a lone UTF-16 surrogate (an unpaired \\ud800-\\udfff escape), which no UTF-8 text can carry' });
    } else if (Array.isArray(v)) {
      v.forEach((item, i) => walk(item, [...path, i]));
    } else if (v !== null && typeof v === 'object') {
      for (const [key, item] of Object.entries(v)) {
        if (hasLoneSurrogate(key)) {
          if (issues.length < max) issues.push({ path: at(path), message: 'a field name holds a lone UTF-16 surrogate (an unpaired \\ud800-\\udfff escape), which no UTF-8 text can carry' });
        } else walk(item, [...path, key]);
      }
    }
  };
  walk(value, prefix);
  return issues;
}

/** Offset of the first byte that does not belong to a well-formed UTF-8 sequence (RFC 3629), or undefined. */
export function firstInvalidUtf8(bytes: Buffer): number | undefined {
  // Node's check is native (SIMD) and almost every body passes it: the walk below only finds where one fails.
  if (isUtf8(bytes)) return undefined;
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i]!;
    if (b < 0x80) {
      i++;
      continue;
    }
    // Lead byte: the sequence length and the allowed range of the second byte (no overlongs, no surrogates, ≤ U+10FFFF).
    const shape =
      b >= 0xc2 && b <= 0xdf ? { n: 2, lo: 0x80, hi: 0xbf }
      : b === 0xe0 ? { n: 3, lo: 0xa0, hi: 0xbf }
      : (b >= 0xe1 && b <= 0xec) || b === 0xee || b === 0xef ? { n: 3, lo: 0x80, hi: 0xbf }
      : b === 0xed ? { n: 3, lo: 0x80, hi: 0x9f }
      : b === 0xf0 ? { n: 4, lo: 0x90, hi: 0xbf }
      : b >= 0xf1 && b <= 0xf3 ? { n: 4, lo: 0x80, hi: 0xbf }
      : b === 0xf4 ? { n: 4, lo: 0x80, hi: 0x8f }
      : undefined;
    if (!shape || i + shape.n > bytes.length) return i;
    const second = bytes[i + 1]!;
    if (second < shape.lo || second > shape.hi) return i;
    for (let k = 2; k < shape.n; k++) {
      const c = bytes[i + k]!;
      if (c < 0x80 || c > 0xbf) return i;
    }
    i += shape.n;
  }
  return undefined;
}

/** Whether arrays and objects nest deeper than `max` (brackets inside strings do not count). */
function exceedsDepth(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
      continue;
    }
    if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}
