import { HeraldEvent } from '../../domain/events/event';
import { Destination } from '../../domain/destinations/destination';
import { BUNDLE_LIMITS, bundleBody, BundleRead, bundlesOf, PUSHED_BUNDLE_LIMITS, readBundleBody } from '../../domain/intake/lane-bundle';
import { LANE_ATTRIBUTES, LaneMessage, purposeOf, toLaneMessage } from '../../domain/intake/lane-message';
import { HERALD_ATTRIBUTE_PREFIX, heraldAttribute, PubSubMessage } from '../../domain/events/cloudevents-pubsub';
import { LaneProvisioner, MessageBus, PulledMessage, TopicNotFoundError } from '../../ports/messaging';
import { batchLaneNames, laneTopicOf, TopologyNames } from '../../topology';
import { BatcherWaker } from './batcher-wake';
import { gunzipped, gzipped } from '../../compression';
import { inLaneSpan } from '../tracing/spans';
import { JournalReference, journalledMessage, readJournalled } from '../../domain/intake/lane-reference';
import { IntakeStore } from '../../ports/intake';
import { IntakeBatch } from '../../domain/intake/intake';

/**
 * Every publish onto a lane goes through here (the messages themselves: domain/intake/lane-message.ts):
 * ingest and `route` fan first attempts out, the retry pump sends claimed retries, `deliver`
 * hands a slow destination's first attempt over to the retry lanes.
 */

export interface LaneDeps {
  bus: MessageBus;
  lanes: LaneProvisioner;
  names: TopologyNames;
  /** Asked after a publish onto the batch lane: wakes a batcher when none runs (app/lanes/batcher-wake.ts). */
  batcherWake?: Pick<BatcherWaker, 'published'>;
  /** Gathers a busy destination's first attempts across requests into bundles (app/lanes/lane-coalescer.ts); absent, each goes at once. */
  coalescer?: { publish(destination: Pick<Destination, 'id' | 'lane' | 'batch'>, message: LaneMessage): Promise<void> };
}

/**
 * Publishes `message` onto its destination's lane for its kind. A dedicated lane that is missing
 * (created outside the admin API, or removed by hand) is provisioned and the publish made again;
 * a missing shared lane means the topology was not applied, which only a deploy mends.
 * Returns the topic it went to.
 */
export async function publishToLane(deps: LaneDeps, destination: Pick<Destination, 'id' | 'lane' | 'batch'>, message: LaneMessage): Promise<string> {
  return publishOn(deps, destination, laneTopicOf(destination, purposeOf(message), deps.names), toLaneMessage(message));
}

async function publishOn(deps: LaneDeps, destination: Pick<Destination, 'id' | 'lane'>, topic: string, published: PubSubMessage): Promise<string> {
  return inLaneSpan(topic, published, () => publishOnce(deps, destination, topic, published));
}

async function publishOnce(deps: LaneDeps, destination: Pick<Destination, 'id' | 'lane'>, topic: string, published: PubSubMessage): Promise<string> {
  try {
    await deps.bus.publish(topic, published);
  } catch (e) {
    if (!(e instanceof TopicNotFoundError)) throw e;
    if (destination.lane !== 'dedicated') {
      throw new Error(`shared lane ${topic} does not exist: apply the topology (pulumi up; local mode creates it at start) with the same HERALD_LANE_SHARDS / HERALD_RETRY_SHARDS as the functions`);
    }
    await deps.lanes.ensureLane(destination.id);
    await deps.bus.publish(topic, published);
  }
  if (deps.batcherWake && topic === batchLaneNames(deps.names).topic) await deps.batcherWake.published();
  return topic;
}

/** What a first-attempt lane message carries besides the event. */
export interface FirstAttemptAttributes {
  /** When Herald accepted the event (max-age limits count from it). */
  publishedAt: Date;
  /** The intake batch the event was journaled in (ingest), for the reconciler. */
  intake?: string;
  /** Its producer resends it (`Herald-Resend`): the first attempt reads its record before sending. */
  resent?: true;
}

/**
 * One event onto the first-attempt lane of each destination it goes to (ingest for events it
 * accepts, route for events published straight to the events topic); a busy pushed destination's
 * with the others that come for it meanwhile, as one bundle (`coalescer`). Rejects when any
 * publish fails: the caller does not count the event accepted, and a resend finds the lanes
 * already published recorded as duplicates by `deliver`.
 */
export async function fanOut(deps: LaneDeps, event: HeraldEvent, targets: readonly Pick<Destination, 'id' | 'lane' | 'batch'>[], carried: FirstAttemptAttributes): Promise<void> {
  const publishedAt = carried.publishedAt.toISOString();
  const intake = carried.intake !== undefined ? { intake: carried.intake } : {};
  const resent = carried.resent ? { resent: true as const } : {};
  await Promise.all(
    targets.map((d) => {
      const message: LaneMessage = { kind: 'first', destinationId: d.id, event, publishedAt, ...intake, ...resent };
      return publishGathered(deps, d, message);
    }),
  );
}

/**
 * A first attempt or a hand-over onto its lane: a pushed destination's with the others the
 * coalescer gathers for it meanwhile (one bundle, one push), a batched one's at once (its
 * batcher gathers them). Returns the lane's topic.
 */
export async function publishGathered(deps: LaneDeps, destination: Pick<Destination, 'id' | 'lane' | 'batch'>, message: LaneMessage): Promise<string> {
  if (!deps.coalescer || destination.batch !== undefined) return publishToLane(deps, destination, message);
  await deps.coalescer.publish(destination, message);
  return laneTopicOf(destination, purposeOf(message), deps.names);
}

/**
 * First attempts of several events for one destination (one ingest request's), as bundles on
 * its first-attempt lane (domain/intake/lane-bundle.ts), gzip: Pub/Sub bills their bytes once
 * compressed instead of each event's whole, and a destination that is pushed (not batched)
 * takes each bundle in one push (app/delivery/deliver.ts deliverPush). One alone goes as it is. Rejects
 * when any bundle's publish fails (the caller counts none of its events accepted).
 */
export async function publishBundled(deps: LaneDeps, destination: Pick<Destination, 'id' | 'lane' | 'batch'>, messages: readonly LaneMessage[]): Promise<void> {
  if (messages.length === 1) {
    await publishToLane(deps, destination, messages[0]!);
    return;
  }
  // One lane for all of them: the coalescer bundles first attempts and hand-overs apart.
  const topic = laneTopicOf(destination, purposeOf(messages[0]!), deps.names);
  await Promise.all(
    bundlesOf(messages.map(toLaneMessage), destination.batch !== undefined ? BUNDLE_LIMITS : PUSHED_BUNDLE_LIMITS).map(async (members) => {
      const attributes = { [`${HERALD_ATTRIBUTE_PREFIX}${LANE_ATTRIBUTES.destination}`]: destination.id, [`${HERALD_ATTRIBUTE_PREFIX}${LANE_ATTRIBUTES.bundle}`]: String(members.length) };
      await publishOn(deps, destination, topic, { data: await gzipped(bundleBody(members)), attributes });
    }),
  );
}

/**
 * A batched destination's first attempts of events journaled in `refs` (their intake batches and
 * places), named instead of carried (domain/intake/lane-reference.ts): one message for each
 * intake batch. The journal must hold them already — publish once its write is durable: the
 * batcher reads the events from it. Rejects when a publish fails.
 */
export async function publishJournalled(deps: LaneDeps, destination: Pick<Destination, 'id' | 'lane' | 'batch'>, refs: readonly Omit<JournalReference, 'destinationId'>[]): Promise<void> {
  const topic = laneTopicOf(destination, 'first', deps.names);
  await Promise.all(refs.map((ref) => publishOn(deps, destination, topic, journalledMessage({ ...ref, destinationId: destination.id }))));
}

/** A pulled message's members if it is a bundle (read, or what is wrong with it); undefined if it is a lane message of its own. */
export async function unbundle(message: PubSubMessage): Promise<BundleRead | undefined> {
  const count = heraldAttribute(message, LANE_ATTRIBUTES.bundle);
  if (count === undefined) return undefined;
  if (!/^[1-9]\d{0,3}$/.test(count)) return { ok: false, issues: [{ path: `attributes.${HERALD_ATTRIBUTE_PREFIX}${LANE_ATTRIBUTES.bundle}`, message: `must be the number of members (1-${BUNDLE_LIMITS.members})` }] };
  let body: Buffer;
  try {
    // The members' bytes and a header line: twice the limit leaves room for the header, and stops a bomb.
    body = await gunzipped(message.data, 2 * BUNDLE_LIMITS.bytes);
  } catch (e) {
    return { ok: false, issues: [{ path: 'data', message: `a bundle is gzip: ${(e as Error).message}` }] };
  }
  return readBundleBody(body, Number(count));
}

/** Reads intake batches for the references of one pull: each batch once, however many messages name it. */
export type JournalReader = Pick<IntakeStore, 'get'>;

/** For readers given no journal: a reference they meet fails (and its message goes back) rather than being taken for empty. */
export const NO_JOURNAL: JournalReader = {
  get: () => Promise.reject(new Error('a batch lane message names its events in the intake journal, and this reader was given no journal to read them from')),
};

export function journalReaderOnce(journal: JournalReader): JournalReader {
  const read = new Map<string, Promise<IntakeBatch | undefined>>();
  return {
    get: (id) => {
      let found = read.get(id);
      if (found === undefined) read.set(id, (found = journal.get(id)));
      return found;
    },
  };
}

/**
 * A pulled message as the lane messages it carries, each with its ack id: a bundle's members
 * (message ids `<id>/<n>`); a reference's events, read from the journal — none when its batch
 * is reconciled and removed (every delivery it names is recorded by then); else the message
 * itself (a bundle or reference that cannot be read too: whoever reads it finds it foreign).
 */
export async function pulledParts(pulled: PulledMessage, journal: JournalReader): Promise<PulledMessage[]> {
  const ref = readJournalled(pulled.message);
  if (ref !== undefined) {
    if (!ref.ok) return [pulled];
    const { destinationId, intake, places, publishedAt, resent } = ref.value;
    const batch = await journal.get(intake);
    if (batch === undefined) return [];
    const events = places.map((p) => batch.events[p]);
    if (events.some((e) => e === undefined)) return [pulled];
    return events.map((event, i) => ({ ...pulled, messageId: `${pulled.messageId}/${i}`, message: toLaneMessage({ kind: 'first', destinationId, event: event!, publishedAt, intake, ...(resent ? { resent } : {}) }) }));
  }
  const bundle = await unbundle(pulled.message);
  if (!bundle?.ok) return [pulled];
  return bundle.members.map((message, i) => ({ ...pulled, messageId: `${pulled.messageId}/${i}`, message }));
}
