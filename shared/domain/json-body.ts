/**
 * JSON request bodies read strictly: UTF-8 only (RFC 8259 §8.1; a decoder that substitutes
 * U+FFFD would change what the sender meant), nesting bounded before anything recursive
 * (JSON.parse, zod, JSON.stringify, Firestore) sees the value, then JSON.parse.
 */

/** Deeper than any body Herald takes needs (a CloudEvent's data included); 10,000 levels is an attack, not data. */
export const MAX_JSON_DEPTH = 128;

export type JsonBody = { ok: true; value: unknown } | { ok: false; problem: 'utf8' | 'depth' | 'syntax'; message: string };

export function parseJsonBytes(bytes: Buffer, maxDepth = MAX_JSON_DEPTH): JsonBody {
  const invalidAt = firstInvalidUtf8(bytes);
  if (invalidAt !== undefined) {
    return { ok: false, problem: 'utf8', message: `body is not valid UTF-8: invalid byte 0x${bytes[invalidAt]!.toString(16).padStart(2, '0')} at offset ${invalidAt}` };
  }
  const text = bytes.toString('utf8');
  if (exceedsDepth(text, maxDepth)) return { ok: false, problem: 'depth', message: `body is nested more than ${maxDepth} levels deep` };
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (e) {
    return { ok: false, problem: 'syntax', message: `body is not valid JSON: ${(e as Error).message}` };
  }
}

/** Offset of the first byte that does not belong to a well-formed UTF-8 sequence (RFC 3629), or undefined. */
export function firstInvalidUtf8(bytes: Buffer): number | undefined {
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
