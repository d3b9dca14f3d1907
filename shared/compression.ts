import { promisify } from 'node:util';
import { gunzip, gunzipSync, gzip, gzipSync } from 'node:zlib';

/**
 * gzip for Herald's own small payloads (lane bundles, group documents). Node's asynchronous
 * zlib costs 100–200 µs of CPU a call in thread-pool hand-offs and stream set-up, whatever the
 * size; the synchronous one, 10–50 µs for the few to hundred kilobytes Herald compresses
 * (measured on this machine: a 100-event bundle, 12.5 KB, gzip 52 against 138 µs, gunzip 13
 * against 74). Below these sizes the event loop is held for less than the async call's own
 * overhead; above them the thread pool takes the work and the loop stays free.
 */
const SYNC_GZIP_BELOW_BYTES = 256 * 1024;
const SYNC_GUNZIP_BELOW_BYTES = 64 * 1024;

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

export function gzipped(data: Buffer | string): Promise<Buffer> {
  const size = typeof data === 'string' ? data.length : data.byteLength;
  return size < SYNC_GZIP_BELOW_BYTES ? Promise.resolve(gzipSync(data)) : gzipAsync(data);
}

/** Rejects (never throws) when `data` is not gzip or inflates past `maxOutputLength`. */
export function gunzipped(data: Buffer, maxOutputLength?: number): Promise<Buffer> {
  const options = maxOutputLength !== undefined ? { maxOutputLength } : {};
  if (data.byteLength >= SYNC_GUNZIP_BELOW_BYTES) return gunzipAsync(data, options);
  try {
    return Promise.resolve(gunzipSync(data, options));
  } catch (e) {
    return Promise.reject(e as Error);
  }
}
