import { performance } from 'node:perf_hooks';
import { PubSub, Topic } from '@google-cloud/pubsub';
import { Tracker } from './receiver';
import { distribution, Distribution, round } from './stats';

export const EVENT_TYPE = 'com.example.bench';
export const EVENT_SOURCE = '/herald-bench';

/** Sends one batch of event ids and resolves once the system under test accepted all of them. */
export type Send = (ids: readonly string[]) => Promise<void>;

/** Each event carries its send time (epoch ms) in its data; latency uses the in-process clock. */
const dataFor = (id: string, sentAt: number) => ({ id, sentAt });

/** POST /ingest in batch mode (application/cloudevents-batch+json). */
export function heraldSender(ingestUrl: string, ingestToken: string, timeoutMs: number): Send {
  return async (ids) => {
    const sentAt = Date.now();
    const body = JSON.stringify(ids.map((id) => ({ specversion: '1.0', id, source: EVENT_SOURCE, type: EVENT_TYPE, datacontenttype: 'application/json', data: dataFor(id, sentAt) })));
    const res = await fetch(ingestUrl, {
      method: 'POST',
      headers: { authorization: `Bearer ${ingestToken}`, 'content-type': 'application/cloudevents-batch+json' },
      body,
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await res.text();
    if (res.status !== 202) throw new Error(`POST /ingest answered ${res.status}: ${text.slice(0, 300)}`);
  };
}

/**
 * Publishes straight to a topic, with the same message shape Herald's lanes carry (the
 * CloudEvents Pub/Sub binding) and the same client batching window as Herald's bus.
 */
export function directSender(topic: Topic): Send {
  return async (ids) => {
    const sentAt = Date.now();
    await Promise.all(
      ids.map((id) =>
        topic.publishMessage({
          data: Buffer.from(JSON.stringify(dataFor(id, sentAt))),
          attributes: { 'ce-id': id, 'ce-source': EVENT_SOURCE, 'ce-type': EVENT_TYPE, 'ce-specversion': '1.0', 'content-type': 'application/json' },
        }),
      ),
    );
  };
}

export function benchTopic(pubsub: PubSub, name: string): Topic {
  return pubsub.topic(name, { batching: { maxMessages: 100, maxMilliseconds: 2 } });
}

export interface LoadOptions {
  batchSize: number;
  concurrency: number;
  /** Give up when nothing new arrives for this long. */
  stallMs: number;
  signal: AbortSignal;
  progress: (line: string, final?: boolean) => void;
  /** More to show on each progress line (a stage count, say). */
  detail?: () => string;
}

export interface LoadResult {
  events: number;
  /** performance.now() of the first send (for stage timings; not reported). */
  firstSentAt: number;
  accepted: number;
  /** First send to the last accepted batch (the producer's view). */
  publishMs?: number;
  delivered: number;
  duplicates: number;
  strays: number;
  /** First send to the last first arrival. */
  elapsedMs?: number;
  eventsPerSecond?: number;
  latencyMs: Distribution;
  complete: boolean;
  problem?: string;
}

export class Interrupted extends Error {
  override name = 'Interrupted';
}

export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new Interrupted('interrupted'));
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new Interrupted('interrupted'));
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/**
 * Sends `ids` in batches, `concurrency` batches at a time, while watching the receiver;
 * resolves when every id arrived, or when arrivals stall (with what got through).
 */
export async function runLoad(send: Send, tracker: Tracker, ids: readonly string[], options: LoadOptions): Promise<LoadResult> {
  const batches = chunks(ids, options.batchSize);
  const began = performance.now();
  let accepted = 0;
  let lastAccepted: number | undefined;
  let sendError: Error | undefined;
  let next = 0;
  let stopped = false;
  const worker = async () => {
    while (next < batches.length && !sendError && !stopped && !options.signal.aborted) {
      const batch = batches[next++]!;
      tracker.markSent(batch, performance.now());
      try {
        await send(batch);
        accepted += batch.length;
        lastAccepted = performance.now();
      } catch (e) {
        sendError ??= e as Error;
      }
    }
  };
  const sending = Promise.all(Array.from({ length: Math.min(options.concurrency, batches.length) }, worker));

  const arrivedOf = () => ids.reduce((n, id) => n + (tracker.arrived.has(id) ? 1 : 0), 0);
  let arrived = 0;
  let acceptedSeen = 0;
  let lastChange = performance.now();
  let lastReport = 0;
  let problem: string | undefined;
  const label = tracker.label;
  for (;;) {
    await sleep(100, options.signal);
    const now = performance.now();
    const nowArrived = arrivedOf();
    // Progress is an arrival or an accepted batch: a hung publish stalls the run too.
    if (nowArrived !== arrived || accepted !== acceptedSeen) lastChange = now;
    arrived = nowArrived;
    acceptedSeen = accepted;
    const rate = arrived / ((now - began) / 1000);
    const detail = options.detail ? `, ${options.detail()}` : '';
    const line = `${label}: published ${accepted}/${ids.length}${detail}, delivered ${arrived}/${ids.length} (${Math.round(rate)}/s)`;
    if (now - lastReport >= 1000) {
      options.progress(line);
      lastReport = now;
    }
    if (arrived >= ids.length && (accepted >= ids.length || sendError)) break;
    if (sendError && arrived >= accepted) {
      problem = `publishing failed after ${accepted} accepted events: ${sendError.message}`;
      break;
    }
    if (now - lastChange > options.stallMs) {
      const what = accepted < ids.length && !sendError ? `publishing stalled (${accepted}/${ids.length} accepted)` : 'deliveries stalled';
      problem = `${what}: ${arrived}/${ids.length} arrived, nothing new for ${Math.round(options.stallMs / 1000)} s${sendError ? `; publishing failed: ${sendError.message}` : ''}`;
      break;
    }
  }
  options.progress(`${label}: published ${accepted}/${ids.length}, delivered ${arrived}/${ids.length}${problem ? ' — gave up' : ' — done'}`, true);
  stopped = true;
  // Batches still in flight after a stall may never return: wait for them only briefly.
  await within(sending, 5000, options.signal);

  const latencies: number[] = [];
  let lastArrival = began;
  let firstSent = Infinity;
  for (const id of ids) {
    const sentAt = tracker.sent.get(id);
    const at = tracker.arrived.get(id);
    if (sentAt !== undefined) firstSent = Math.min(firstSent, sentAt);
    if (sentAt === undefined || at === undefined) continue;
    latencies.push(at - sentAt);
    lastArrival = Math.max(lastArrival, at);
  }
  const elapsedMs = arrived > 0 ? lastArrival - firstSent : undefined;
  return {
    events: ids.length,
    firstSentAt: firstSent,
    accepted,
    ...(lastAccepted !== undefined ? { publishMs: round(lastAccepted - firstSent) } : {}),
    delivered: arrived,
    duplicates: tracker.duplicates,
    strays: tracker.strays,
    ...(elapsedMs !== undefined ? { elapsedMs: round(elapsedMs), eventsPerSecond: round((arrived / elapsedMs) * 1000) } : {}),
    latencyMs: distribution(latencies),
    complete: problem === undefined,
    ...(problem !== undefined ? { problem } : {}),
  };
}

/** Resolves with the promise's value, or undefined after `ms`; clears its timer either way. */
function within<T>(promise: Promise<T>, ms: number, signal: AbortSignal): Promise<T | undefined> {
  return new Promise((resolve, reject) => {
    const onAbort = () => finish(() => reject(new Interrupted('interrupted')));
    const timer = setTimeout(() => finish(() => resolve(undefined)), ms);
    const finish = (settle: () => void) => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      settle();
    };
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then((v) => finish(() => resolve(v)), (e: unknown) => finish(() => reject(e as Error)));
  });
}

/** One event at a time, each sent only after the previous one arrived: latency with no queue. */
export async function runIdleProbe(send: Send, tracker: Tracker, ids: readonly string[], options: Pick<LoadOptions, 'stallMs' | 'signal'>): Promise<Distribution & { problem?: string }> {
  const latencies: number[] = [];
  for (const id of ids) {
    const sentAt = performance.now();
    tracker.markSent([id], sentAt);
    await send([id]);
    const at = await within(tracker.arrival(id), options.stallMs, options.signal);
    if (at === undefined) return { ...distribution(latencies), problem: `event ${id} did not arrive within ${Math.round(options.stallMs / 1000)} s` };
    latencies.push(at - sentAt);
  }
  return distribution(latencies);
}
