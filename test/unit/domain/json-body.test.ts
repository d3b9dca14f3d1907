import { firstInvalidUtf8, hasLoneSurrogate, loneSurrogateIssues, MAX_JSON_DEPTH, parseJsonBytes, wellFormed } from '../../../shared/domain/events/json-body';

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

describe('lone UTF-16 surrogates', () => {
  const parse = (text: string) => parseJsonBytes(Buffer.from(text));

  test('a lone high or low surrogate in a string is refused with its JSON path', () => {
    expect(parse('{"name":"\\ud800"}')).toEqual({
      ok: false,
      problem: 'surrogate',
      message: expect.stringMatching(/^body holds a lone UTF-16 surrogate at name: /) as string,
      issues: [{ path: 'name', message: expect.stringMatching(/lone UTF-16 surrogate/) as string }],
    });
    expect(parse('{"url":"x","eventTypes":["a.b","x\\uDC00y"]}')).toMatchObject({ problem: 'surrogate', issues: [{ path: 'eventTypes[1]' }] });
    expect(parse('{"a":{"b":[{"c":"\\ud83d"}]}}')).toMatchObject({ problem: 'surrogate', issues: [{ path: 'a.b[0].c' }] });
    expect(parse('"\\udfff"')).toMatchObject({ problem: 'surrogate', issues: [{ path: 'body' }] });
  });

  test('a field name holding one is refused at the object that holds it', () => {
    expect(parse('{"policy":{"\\ud800":1}}')).toMatchObject({ problem: 'surrogate', issues: [{ path: 'policy', message: expect.stringMatching(/field name/) as string }] });
  });

  test('every one is named (up to ten)', () => {
    const result = parse(JSON.stringify({ a: Array.from({ length: 30 }, () => 'x') }).replace(/"x"/g, '"\\ud800"'));
    expect(result).toMatchObject({ problem: 'surrogate' });
    expect(result.ok === false && result.problem === 'surrogate' ? result.issues.map((i) => i.path) : []).toEqual(Array.from({ length: 10 }, (_, i) => `a[${i}]`));
  });

  test('pairs, escaped or not, and text that only looks like an escape are fine', () => {
    expect(parse('{"e":"\\ud83d\\ude00","f":"😀","g":"\\\\ud800"}')).toEqual({ ok: true, value: { e: '😀', f: '😀', g: '\\ud800' } });
  });

  test('allowed on request (a Pub/Sub push envelope, judged by the function)', () => {
    expect(parseJsonBytes(Buffer.from('{"a":"\\ud800"}'), { loneSurrogates: 'allow' })).toEqual({ ok: true, value: { a: '\ud800' } });
  });

  test('hasLoneSurrogate and wellFormed', () => {
    expect(['\ud800', 'a\udc00', '\udc00\ud800', '\ud83d'].map(hasLoneSurrogate)).toEqual([true, true, true, true]);
    expect(['', 'abc', '😀', '\ud83d\ude00'].map(hasLoneSurrogate)).toEqual([false, false, false, false]);
    expect(wellFormed('a\ud800b\udc00😀')).toBe('a\ufffdb\ufffd😀');
    // A cut through a pair, as `slice` makes one.
    expect(wellFormed('😀😀'.slice(0, 3))).toBe('😀\ufffd');
  });

  test('loneSurrogateIssues takes a prefix (an event in a batch)', () => {
    expect(loneSurrogateIssues({ data: { k: '\ud800' } }, [2])).toEqual([{ path: '[2].data.k', message: expect.any(String) as string }]);
  });
});
