import { Webhook } from 'standardwebhooks';

/**
 * Standard Webhooks signature headers. The id is the same on every attempt of an event,
 * so receivers can deduplicate on it; during a secret rotation every secret signs and the
 * signatures travel space-separated, as the specification allows.
 */
export function signatureHeaders(secrets: readonly string[], webhookId: string, at: Date, body: Buffer): Record<string, string> {
  if (secrets.length === 0) throw new Error('a destination needs at least one signing secret');
  const signatures = secrets.map((secret) => new Webhook(secret).sign(webhookId, at, body));
  return {
    'webhook-id': webhookId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': signatures.join(' '),
  };
}

export function webhookIdFor(eventKey: string): string {
  return `msg_${eventKey}`;
}
