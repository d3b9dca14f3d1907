import { z } from 'zod';
import { HERALD_ATTRIBUTE_PREFIX, heraldAttribute, PubSubMessage } from '../events/cloudevents-pubsub';
import { ValidationIssue } from '../events/event';
import { INTAKE_BATCH_EVENTS } from './intake';
import { LANE_ATTRIBUTES } from './lane-message';

/**
 * A batch lane message that names its events instead of carrying them: their intake journal
 * batch and their places in it (app/lanes/lanes.ts publishJournalled). On the batch lane Pub/Sub
 * bills every byte twice (published, then pulled), and the events are durable in the journal
 * already — a hundred of them there are one read for the batcher. The journal keeps them until
 * the reconciler finds a record of each (IntakeBatch.refs), so a message that names a journal
 * batch no longer there names deliveries already recorded.
 */
/**
 * A request's events for one batched destination go by reference from this many on. The batcher
 * reads a journal batch per reference ($0.30 per million reads, regional list price), which
 * costs what ~4 KB of batch lane bytes do (published and pulled, $40 per TiB each): a bundle
 * of fewer ~1 KB events compresses to less, and one or two events pay Pub/Sub's 1,000-byte
 * minimum a request either way.
 */
export const REFERENCE_MIN_EVENTS = 16;

export interface JournalReference {
  destinationId: string;
  /** The intake batch (domain/intake/intake.ts) and the events' places in it. */
  intake: string;
  places: number[];
  /** When ingest accepted the events (ISO). */
  publishedAt: string;
  /** Their producer resends them (`Herald-Resend`): each first attempt reads its record first. */
  resent?: true;
}

const placesSchema = z.array(z.number().int().min(0).max(INTAKE_BATCH_EVENTS - 1), { error: 'data must list the events’ places in their intake batch' }).min(1, { error: 'a reference names one event at least' });

export function journalledMessage(ref: JournalReference): PubSubMessage {
  const attribute = (name: string) => `${HERALD_ATTRIBUTE_PREFIX}${name}`;
  const attributes: Record<string, string> = {
    [attribute(LANE_ATTRIBUTES.destination)]: ref.destinationId,
    [attribute(LANE_ATTRIBUTES.publishedAt)]: ref.publishedAt,
    [attribute(LANE_ATTRIBUTES.intake)]: ref.intake,
    [attribute(LANE_ATTRIBUTES.journalled)]: String(ref.places.length),
  };
  if (ref.resent) attributes[attribute(LANE_ATTRIBUTES.resent)] = '1';
  return { data: Buffer.from(JSON.stringify(ref.places)), attributes };
}

export type JournalReferenceRead = { ok: true; value: JournalReference } | { ok: false; issues: ValidationIssue[] };

/** A pulled message read as a reference; undefined when it is not one. */
export function readJournalled(message: PubSubMessage): JournalReferenceRead | undefined {
  const lane = (name: string) => heraldAttribute(message, name);
  const count = lane(LANE_ATTRIBUTES.journalled);
  if (count === undefined) return undefined;
  const [destinationId, intake, publishedAt] = [lane(LANE_ATTRIBUTES.destination), lane(LANE_ATTRIBUTES.intake), lane(LANE_ATTRIBUTES.publishedAt)];
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(message.data).toString('utf8'));
  } catch {
    return { ok: false, issues: [{ path: 'data', message: 'a reference lists its events’ places as JSON' }] };
  }
  const places = placesSchema.safeParse(json);
  const issues: ValidationIssue[] = places.success ? [] : places.error.issues.map((i) => ({ path: ['data', ...i.path.map(String)].join('.'), message: i.message }));
  if (places.success && String(places.data.length) !== count) issues.push({ path: `attributes.${HERALD_ATTRIBUTE_PREFIX}${LANE_ATTRIBUTES.journalled}`, message: `says ${count} events; data lists ${places.data.length}` });
  if (!destinationId || !intake || !publishedAt || Number.isNaN(Date.parse(publishedAt))) issues.push({ path: 'attributes', message: 'a reference names its destination, intake batch and publish time' });
  if (issues.length > 0 || !places.success) return { ok: false, issues };
  return { ok: true, value: { destinationId: destinationId!, intake: intake!, places: places.data, publishedAt: publishedAt!, ...(lane(LANE_ATTRIBUTES.resent) === '1' ? { resent: true as const } : {}) } };
}
