import { Timestamp } from '@google-cloud/firestore';
import { Webhook } from 'standardwebhooks';
import type { ReceivedRequest } from './receiver';

/** Whether a received request verifies with a Standard Webhooks library and `secret`. */
export function verifies(req: ReceivedRequest, secret: string): boolean {
  try {
    new Webhook(secret).verify(req.body, req.headers as Record<string, string>, { jsonParse: false });
    return true;
  } catch {
    return false;
  }
}

/** Every string a document or answer holds, at any depth, bytes read both as text and as base64 (field names too). */
export function stringsIn(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (value instanceof Timestamp || value === null || typeof value !== 'object') return [];
  if (value instanceof Uint8Array) return [Buffer.from(value).toString('utf8'), Buffer.from(value).toString('base64')];
  if (Array.isArray(value)) return value.flatMap(stringsIn);
  return Object.entries(value).flatMap(([k, v]) => [k, ...stringsIn(v)]);
}
