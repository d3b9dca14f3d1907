import type { LanePurpose } from '../../topology';
import { fromPubSubMessage, HERALD_ATTRIBUTE_PREFIX, heraldAttribute, malformedAttributes, PubSubMessage, PushDelivery, toPubSubMessage } from '../events/cloudevents-pubsub';
import { HeraldEvent, ValidationIssue } from '../events/event';
import { INTERNAL_DESTINATION_ID } from '../ids';
import type { BatchPlace } from '../modes/batching';

/**
 * What travels on a lane (a destination's Pub/Sub topic, its own or a shard of the shared
 * ones): the event in the CloudEvents Pub/Sub binding, and Herald's own attributes, with the
 * `herald-` prefix. Three kinds, each published by one writer and read by `deliver`:
 * - first: ingest or `route` fans an accepted event out, one message per destination;
 * - claimed: the retry pump sends a due delivery it claimed, with the claim;
 * - handed-over: `deliver` moves a slow destination's first attempt from its shared lane to the
 *   retry lanes, where it is attempted as a first attempt and never moved again.
 */
export const LANE_ATTRIBUTES = {
  destination: 'destination',
  /** When the event was first published to Herald (max-age limits count from it). */
  publishedAt: 'published-at',
  /** Set by the retry pump: the claim this message carries (the record's claimedAt). */
  claim: 'claim',
  /** Set by ingest: the intake batch the event was accepted in (domain/intake/intake.ts); route passes it on. */
  intake: 'intake',
  /** Set by deliver on a slow destination's first attempt it moved to the retry lanes. */
  handedOver: 'handed-over',
  /** Set by ingest on an event its producer resends (`Herald-Resend`): its first attempt reads its record before sending. */
  resent: 'resent',
  /** Set by the retry pump on a claimed retry of a batch's member: `<batch id>/<position>/<size>`, so the batch meets again. */
  batch: 'batch',
  /** The message is a bundle of this many lane messages for one destination (domain/intake/lane-bundle.ts), gzip: on the batch lane, or a first-attempt lane. */
  bundle: 'bundle',
  /** The message names this many events in the intake journal instead of carrying them (domain/intake/lane-reference.ts): on the batch lane. */
  journalled: 'journalled',
} as const;

export type { LanePurpose };

export type LaneMessage =
  | { kind: 'first'; destinationId: string; event: HeraldEvent; publishedAt: string; intake?: string; resent?: true }
  | { kind: 'handed-over'; destinationId: string; event: HeraldEvent; publishedAt: string; intake?: string; resent?: true }
  | { kind: 'claimed'; destinationId: string; event: HeraldEvent; claim: string; publishedAt?: string; batch?: BatchPlace };

export function purposeOf(message: Pick<LaneMessage, 'kind'>): LanePurpose {
  return message.kind === 'first' ? 'first' : 'retry';
}

/** The Pub/Sub message that carries `message`. */
export function toLaneMessage(message: LaneMessage): PubSubMessage {
  const attributes: Record<string, string> = { [LANE_ATTRIBUTES.destination]: message.destinationId };
  if (message.publishedAt !== undefined) attributes[LANE_ATTRIBUTES.publishedAt] = message.publishedAt;
  if (message.kind === 'claimed') {
    attributes[LANE_ATTRIBUTES.claim] = message.claim;
    if (message.batch) attributes[LANE_ATTRIBUTES.batch] = `${message.batch.id}/${message.batch.position}/${message.batch.size}`;
  } else {
    if (message.intake !== undefined) attributes[LANE_ATTRIBUTES.intake] = message.intake;
    if (message.resent) attributes[LANE_ATTRIBUTES.resent] = '1';
  }
  if (message.kind === 'handed-over') attributes[LANE_ATTRIBUTES.handedOver] = '1';
  return toPubSubMessage(message.event, attributes);
}

/** A lane message as `deliver` reads it: every kind with its publish time (`publishedAt`, or the push's). */
export type ReadLaneMessage = LaneMessage & { publishedAt: string };

export type LaneMessageRead = { ok: true; value: ReadLaneMessage } | { ok: false; issues: ValidationIssue[] };

/**
 * A pushed lane message, read. Only Herald publishes to lanes, after validating: one without
 * a valid destination or event, or with an attribute no publish could carry, is foreign.
 */
export function readLaneMessage(push: PushDelivery): LaneMessageRead {
  // The lane's own attributes first, then the event they carry.
  const lane = (name: string) => heraldAttribute(push.message, name);
  const destinationId = lane(LANE_ATTRIBUTES.destination);
  const publishedAt = lane(LANE_ATTRIBUTES.publishedAt) ?? push.publishTime.toISOString();
  const claim = lane(LANE_ATTRIBUTES.claim);
  const batch = claim !== undefined ? batchPlaceOf(lane(LANE_ATTRIBUTES.batch)) : undefined;
  const malformed = malformedAttributes(push.message);
  const parsed = fromPubSubMessage(push.message, push.publishTime);
  const issues: ValidationIssue[] = [...(parsed.ok ? [] : parsed.issues), ...malformed];
  if (!destinationId || !INTERNAL_DESTINATION_ID.test(destinationId)) issues.unshift({ path: `attributes.${HERALD_ATTRIBUTE_PREFIX}${LANE_ATTRIBUTES.destination}`, message: 'a destination id is required' });
  if (!parsed.ok || issues.length > 0) return { ok: false, issues };
  const event = parsed.value;
  if (claim !== undefined) return { ok: true, value: { kind: 'claimed', destinationId: destinationId!, event, claim, publishedAt, ...(batch ? { batch } : {}) } };
  const intake = lane(LANE_ATTRIBUTES.intake);
  const kind = lane(LANE_ATTRIBUTES.handedOver) !== undefined ? 'handed-over' : 'first';
  const resent = lane(LANE_ATTRIBUTES.resent) !== undefined ? { resent: true as const } : {};
  return { ok: true, value: { kind, destinationId: destinationId!, event, publishedAt, ...(intake !== undefined ? { intake } : {}), ...resent } };
}

/** The intake batch a message on the events topic was journaled in (ingest), which `route` carries on. */
export function intakeOf(message: PubSubMessage): string | undefined {
  return heraldAttribute(message, LANE_ATTRIBUTES.intake);
}

/** A `herald-batch` attribute read; one that is not `<id>/<position>/<size>` is ignored (the retry goes alone). */
function batchPlaceOf(text: string | undefined): BatchPlace | undefined {
  const m = text === undefined ? null : /^([A-Za-z0-9_-]{1,64})\/(\d{1,4})\/(\d{1,4})$/.exec(text);
  if (!m) return undefined;
  const [position, size] = [Number(m[2]), Number(m[3])];
  return position < size ? { id: m[1]!, position, size } : undefined;
}
