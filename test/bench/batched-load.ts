/**
 * The batched bench's load: the receiver and the sender, in a process of their own (forked by
 * batched.ts), so that the bench process's CPU is Herald's alone. Its settings come in its
 * environment (BATCHED_LOAD_*, set by the parent); it starts the receiver and makes every
 * request body, says `ready` with the receiver's URL, and on `go` sends the events, paced,
 * waits for them to arrive (or for nothing to arrive for the stall timeout) and answers `done`
 * with what the receiver saw. Sender and receiver share this process's clock: latencies are exact.
 */
import { performance } from 'node:perf_hooks';
import { realisticData } from './event-payload';
import { BenchReceiver, Tracker } from './receiver';

export const BATCHED_PATH = '/batched';

export interface BatchedLoadSettings {
  stackUrl: string;
  ingestToken: string;
  events: number;
  rate: number;
  perPost: number;
  stallMs: number;
  source: string;
  type: string;
}

export type BatchedLoadMessage =
  | { type: 'ready'; receiverUrl: string }
  | { type: 'failed'; message: string }
  | { type: 'done'; received: number; again: number; requests: number; seconds: number; addedMs: number[]; failure?: string };

export const BATCHED_LOAD_ENV = 'BATCHED_LOAD_SETTINGS';

const send = (message: BatchedLoadMessage) => process.send?.(message);

async function main(): Promise<void> {
  const settings = JSON.parse(process.env[BATCHED_LOAD_ENV] ?? '') as BatchedLoadSettings;
  const { stackUrl, ingestToken, events, rate, perPost, stallMs, source, type } = settings;
  const receiver = await new BenchReceiver().start();
  const tracker = new Tracker('batched');
  receiver.route(BATCHED_PATH, tracker, 'batch-body');
  const event = (i: number) => ({ specversion: '1.0', id: `e-${i}`, source, type, datacontenttype: 'application/json', data: realisticData(`${i}`, 910) });
  const bodies = Array.from({ length: Math.ceil(events / perPost) }, (_, n) => {
    const batch = Array.from({ length: Math.min(perPost, events - n * perPost) }, (_, k) => event(n * perPost + k));
    return { ids: batch.map((e) => e.id), body: JSON.stringify(batch) };
  });
  process.once('message', (m: { type: string }) => {
    if (m.type !== 'go') return;
    void run().then(send, (e: unknown) => send({ type: 'done', received: 0, again: 0, requests: 0, seconds: 0, addedMs: [], failure: (e as Error).message }));
  });
  const run = async (): Promise<BatchedLoadMessage> => {
    const start = performance.now();
    const posts: Promise<void>[] = [];
    let failure: string | undefined;
    for (let i = 0; i < events && failure === undefined; i += perPost) {
      const wait = start + (i / rate) * 1000 - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const { ids, body } = bodies[i / perPost]!;
      tracker.markSent(ids, performance.now());
      posts.push(
        fetch(`${stackUrl}/ingest`, { method: 'POST', headers: { authorization: `Bearer ${ingestToken}`, 'content-type': 'application/cloudevents-batch+json' }, body }).then(async (r) => {
          if (r.status !== 202) failure ??= `POST /ingest answered ${r.status}: ${(await r.text()).slice(0, 200)}`;
        }),
      );
    }
    await Promise.all(posts);
    let [seen, lastChange] = [0, performance.now()];
    while (failure === undefined && tracker.arrived.size < events && performance.now() - lastChange < stallMs) {
      await new Promise((r) => setTimeout(r, 100));
      if (tracker.arrived.size !== seen) [seen, lastChange] = [tracker.arrived.size, performance.now()];
    }
    const addedMs = [...tracker.arrived].map(([id, at]) => at - tracker.sent.get(id)!).sort((a, b) => a - b);
    await receiver.stop();
    return { type: 'done', received: tracker.arrived.size, again: tracker.duplicates, requests: receiver.requestsOn(BATCHED_PATH), seconds: (performance.now() - start) / 1000, addedMs, ...(failure ? { failure } : {}) };
  };
  send({ type: 'ready', receiverUrl: receiver.url });
}

// batched.ts imports the settings' shape from here: only the forked process runs.
if (require.main === module) {
  main().catch((e: unknown) => {
    send({ type: 'failed', message: (e as Error).message });
    process.exitCode = 1;
  });
}
