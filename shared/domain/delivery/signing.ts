import { isUtf8 } from 'node:buffer';
import { createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';

/**
 * Standard Webhooks signature headers. The id is the same on every attempt of an event,
 * so receivers can deduplicate on it; during a secret rotation every secret signs and the
 * signatures travel space-separated, as the specification allows.
 *
 * The reference libraries sign the body as text. For data that is not valid UTF-8 that
 * text differs from the bytes on the wire, so Herald also signs the raw bytes: a receiver
 * that HMACs the raw body and one that uses a Standard Webhooks library both find a match.
 */
/** Every webhook attempt's User-Agent. */
export const USER_AGENT = 'Herald/0.1';

export function signatureHeaders(secrets: readonly string[], webhookId: string, at: Date, body: Buffer): Record<string, string> {
  if (secrets.length === 0) throw new Error('a destination needs at least one signing secret');
  const rawBytesDiffer = !isUtf8(body);
  // Valid UTF-8 (nearly every body): the library's text is these very bytes, so node's HMAC gives
  // its signature, without its pure-JS SHA-256 (1.24 ms a 100 KB batch body against 0.06).
  const signatures = secrets.flatMap((secret) => (rawBytesDiffer ? [new Webhook(secret).sign(webhookId, at, body), rawBytesSignature(secret, webhookId, at, body)] : [rawBytesSignature(secret, webhookId, at, body)]));
  return {
    'webhook-id': webhookId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': signatures.join(' '),
  };
}

export function webhookIdFor(eventKey: string): string {
  return `msg_${eventKey}`;
}

function rawBytesSignature(secret: string, webhookId: string, at: Date, body: Buffer): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const prefix = Buffer.from(`${webhookId}.${Math.floor(at.getTime() / 1000)}.`, 'utf8');
  return `v1,${createHmac('sha256', key).update(prefix).update(body).digest('base64')}`;
}
