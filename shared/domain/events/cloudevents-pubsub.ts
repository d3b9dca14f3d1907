import { z } from 'zod';
import { buildEvent, HeraldEvent, issuesFromZod, Parsed, ValidationIssue } from './event';
import { hasLoneSurrogate } from './json-body';

/**
 * CloudEvents Google Cloud Pub/Sub protocol binding (binary content mode): every context
 * attribute travels as a `ce-` message attribute, datacontenttype as `content-type`, and the
 * message data is the event data. Herald's own routing attributes use the `herald-` prefix.
 */

export interface PubSubMessage {
  data: Buffer;
  attributes: Record<string, string>;
}

export const HERALD_ATTRIBUTE_PREFIX = 'herald-';

export function toPubSubMessage(event: HeraldEvent, heraldAttributes: Record<string, string> = {}): PubSubMessage {
  const attributes: Record<string, string> = {};
  for (const [name, value] of Object.entries(event.attributes)) {
    attributes[name === 'datacontenttype' ? 'content-type' : `ce-${name}`] = value;
  }
  for (const [name, value] of Object.entries(heraldAttributes)) attributes[`${HERALD_ATTRIBUTE_PREFIX}${name}`] = value;
  return { data: event.data, attributes };
}

/** `publishTime` stands in for a missing `ce-time`, so every redelivery yields the same event. */
export function fromPubSubMessage(message: PubSubMessage, publishTime: Date): Parsed<HeraldEvent> {
  const raw: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(message.attributes)) {
    if (name.startsWith('ce-')) raw[name.slice(3)] = value;
    else if (name === 'content-type') raw.datacontenttype = value;
  }
  const result = buildEvent(raw, message.data, publishTime);
  if (result.ok) return result;
  return { ok: false, issues: result.issues.map((i) => ({ ...i, path: i.path === 'datacontenttype' ? 'attributes.content-type' : `attributes.ce-${i.path}` })) };
}

/**
 * The attributes of a pushed message whose name or value holds a lone UTF-16 surrogate. Pub/Sub
 * itself cannot carry one (its publish fails), so only a forged push holds one; nothing of it may
 * go on to Firestore or another publish, which would fail the same way.
 */
export function malformedAttributes(message: PubSubMessage): ValidationIssue[] {
  return Object.entries(message.attributes)
    .filter(([name, value]) => hasLoneSurrogate(name) || hasLoneSurrogate(value))
    .map(([name]) => ({ path: hasLoneSurrogate(name) ? 'attributes' : `attributes.${name}`, message: `${hasLoneSurrogate(name) ? 'an attribute name' : 'the value'} holds a lone UTF-16 surrogate, which no UTF-8 text can carry` }));
}

export function heraldAttribute(message: PubSubMessage, name: string): string | undefined {
  return message.attributes[`${HERALD_ATTRIBUTE_PREFIX}${name}`];
}

/** A Pub/Sub push request body (what a push subscription POSTs). */
export const pushEnvelopeSchema = z.object({
  subscription: z.string({ error: 'subscription (string) is required' }).min(1),
  message: z.object(
    {
      data: z.base64({ error: 'message.data must be base64' }).optional(),
      attributes: z.record(z.string(), z.string(), { error: 'message.attributes must map strings to strings' }).optional(),
      messageId: z.string({ error: 'message.messageId (string) is required' }).min(1),
      publishTime: z.iso.datetime({ offset: true, error: 'message.publishTime must be an RFC 3339 timestamp' }),
    },
    { error: 'message (object) is required' },
  ),
  deliveryAttempt: z.number().int().positive().optional(),
});

export interface PushDelivery {
  subscription: string;
  messageId: string;
  publishTime: Date;
  message: PubSubMessage;
  /** Pub/Sub's own count; absent on the emulator, so Herald never relies on it. */
  deliveryAttempt?: number;
}

export function parsePushEnvelope(body: unknown): Parsed<PushDelivery> {
  const parsed = pushEnvelopeSchema.safeParse(body);
  if (!parsed.success) return { ok: false, issues: issuesFromZod(parsed.error) };
  const { message, subscription, deliveryAttempt } = parsed.data;
  return {
    ok: true,
    value: {
      subscription,
      messageId: message.messageId,
      publishTime: new Date(message.publishTime),
      message: { data: Buffer.from(message.data ?? '', 'base64'), attributes: message.attributes ?? {} },
      ...(deliveryAttempt !== undefined ? { deliveryAttempt } : {}),
    },
  };
}
