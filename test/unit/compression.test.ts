import { gunzipSync, gzipSync } from 'node:zlib';
import { gunzipped, gzipped } from '../../shared/compression';

/** Herald's gzip: synchronous for small payloads (cheaper than the thread pool's hand-off), asynchronous for large; the same bytes either way. */

test('small and large payloads round-trip, and read as any gzip reader reads them', async () => {
  for (const size of [10, 100_000, 300_000, 2_000_000]) {
    const data = Buffer.from(Array.from({ length: size }, (_, i) => String.fromCharCode(97 + ((i * 7919) % 26))).join(''));
    const packed = await gzipped(data);
    expect(gunzipSync(packed).equals(data)).toBe(true);
    expect((await gunzipped(gzipSync(data))).equals(data)).toBe(true);
  }
  expect((await gunzipped(await gzipped('{"a":1}'))).toString()).toBe('{"a":1}');
});

test('what is not gzip, or inflates past the limit, rejects (never throws) on either path', async () => {
  const call = gunzipped(Buffer.from('not gzip'));
  await expect(call).rejects.toThrow(/incorrect header check/);
  const bomb = gzipSync(Buffer.alloc(1_000_000));
  await expect(gunzipped(bomb, 1000)).rejects.toThrow(/Cannot create a Buffer larger than|maxOutputLength|larger than/);
  const bigBomb = gzipSync(Buffer.alloc(200_000_000));
  expect(bigBomb.byteLength).toBeGreaterThan(64 * 1024);
  await expect(gunzipped(bigBomb, 1000)).rejects.toThrow();
});
