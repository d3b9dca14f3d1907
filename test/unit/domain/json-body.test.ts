import { firstInvalidUtf8, MAX_JSON_DEPTH, parseJsonBytes } from '../../../shared/domain/json-body';

const fatal = new TextDecoder('utf-8', { fatal: true });
const isValidUtf8 = (b: Buffer) => {
  try {
    fatal.decode(b);
    return true;
  } catch {
    return false;
  }
};

describe('firstInvalidUtf8', () => {
  test.each<[string, number[], number | undefined]>([
    ['ASCII', [0x7b, 0x7d], undefined],
    ['é, €, 😀', [...Buffer.from('é€😀')], undefined],
    ['a lone continuation byte', [0x61, 0x80], 1],
    ['0xff', [0x7b, 0xff, 0x7d], 1],
    ['an overlong "/" (C0 AF)', [0xc0, 0xaf], 0],
    ['an overlong 3-byte (E0 80 AF)', [0xe0, 0x80, 0xaf], 0],
    ['a UTF-16 surrogate (ED A0 80)', [0xed, 0xa0, 0x80], 0],
    ['above U+10FFFF (F4 90 80 80)', [0xf4, 0x90, 0x80, 0x80], 0],
    ['a truncated sequence', [0x61, 0xe2, 0x82], 1],
    ['a lead byte followed by ASCII', [0xc3, 0x41], 0],
  ])('%s', (_, bytes, expected) => {
    expect(firstInvalidUtf8(Buffer.from(bytes))).toBe(expected);
  });

  test('agrees with a fatal TextDecoder on random bytes', () => {
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
    for (let n = 0; n < 5000; n++) {
      const bytes = Buffer.from(Array.from({ length: 1 + (next() % 8) }, () => (next() % 3 === 0 ? next() % 128 : 0x80 + (next() % 128))));
      expect(firstInvalidUtf8(bytes) === undefined).toBe(isValidUtf8(bytes));
    }
  });
});

describe('parseJsonBytes', () => {
  test('valid JSON', () => {
    expect(parseJsonBytes(Buffer.from('{"a": ["ü", {"b": "[[[{{{"}]}'))).toEqual({ ok: true, value: { a: ['ü', { b: '[[[{{{' }] } });
  });

  test('invalid UTF-8 is refused with the byte and its offset, before any parsing', () => {
    expect(parseJsonBytes(Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]))).toEqual({
      ok: false,
      problem: 'utf8',
      message: 'body is not valid UTF-8: invalid byte 0xff at offset 6',
    });
  });

  test('10,000 levels of nesting are refused without recursing', () => {
    const deep = Buffer.from(`${'['.repeat(10_000)}${']'.repeat(10_000)}`);
    expect(parseJsonBytes(deep)).toEqual({ ok: false, problem: 'depth', message: `body is nested more than ${MAX_JSON_DEPTH} levels deep` });
    expect(parseJsonBytes(Buffer.from(`${'{"a":'.repeat(MAX_JSON_DEPTH + 1)}1${'}'.repeat(MAX_JSON_DEPTH + 1)}`))).toMatchObject({ problem: 'depth' });
  });

  test('exactly the limit is fine; brackets in strings (escaped quotes included) do not count', () => {
    expect(parseJsonBytes(Buffer.from(`${'['.repeat(MAX_JSON_DEPTH)}${']'.repeat(MAX_JSON_DEPTH)}`)).ok).toBe(true);
    expect(parseJsonBytes(Buffer.from(JSON.stringify({ s: `\\"${'['.repeat(1000)}` }))).ok).toBe(true);
  });

  test('a syntax error says so', () => {
    expect(parseJsonBytes(Buffer.from('{"a": '))).toMatchObject({ ok: false, problem: 'syntax', message: expect.stringMatching(/^body is not valid JSON: /) as string });
  });
});
