/**
 * One deliver instance for `npm run bench -- scale` (scale-deliver.ts forks it): a Herald
 * runtime (createRuntime from the environment the bench passes: the same project, emulators
 * and secrets key as the stack that registered the destinations) that takes the deliveries it
 * is sent as lane messages straight into `deliverFromLane` (as the deliver function does with a
 * push), `concurrency` at a time, then reports its memory. Alone in its process, so its RSS is
 * the instance's.
 */
import { performance } from 'node:perf_hooks';
import { writeHeapSnapshot } from 'node:v8';
import { deliverFromLane } from '../../shared/app/delivery/deliver';
import { loadConfig } from '../../shared/config';
import { ACCOUNT_EXTENSION } from '../../shared/domain/access/account';
import { toLaneMessage } from '../../shared/domain/intake/lane-message';
import { createLogger } from '../../shared/log';
import { createRuntime } from '../../shared/runtime/runtime';
import { deliverDeps } from '../../shared/runtime/delivery-deps';

/** A destination to deliver to: Herald's internal id (`<account>_<id>`), its account, a type it takes. */
export type DeliverTarget = { destinationId: string; account: string; type: string };

export type ChildMessage =
  | { type: 'ready'; rssMiB: number }
  | { type: 'failed'; message: string }
  | { type: 'report'; outcomes: Record<string, number>; errors: number; firstError?: string; seconds: number; memory: ChildMemory };

export interface ChildMemory {
  /** Before the first delivery (the runtime made, nothing loaded). */
  startRssMiB: number;
  /** After the last, and after a collection where the process allows one. */
  rssMiB: number;
  /** The most this process held (getrusage). */
  maxRssMiB: number;
  heapUsedMiB: number;
  heapTotalMiB: number;
  externalMiB: number;
}

export interface StartMessage {
  type: 'start';
  targets: DeliverTarget[];
  perDestination: number;
  concurrency: number;
}

const mib = (bytes: number) => Math.round((bytes / 2 ** 20) * 10) / 10;
const send = (m: ChildMessage, then?: () => void) => (process.send ? process.send(m, undefined, {}, () => then?.()) : then?.());

async function deliverAll(rt: ReturnType<typeof createRuntime>, start: StartMessage, startRss: number): Promise<ChildMessage> {
  const deps = deliverDeps(rt);
  const outcomes: Record<string, number> = {};
  let errors = 0;
  let firstError: string | undefined;
  const total = start.targets.length * start.perDestination;
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: start.concurrency }, async () => {
      while (next < total) {
        const i = next++;
        // Round robin over the destinations: each event of one destination lands among all the others'.
        const target = start.targets[i % start.targets.length]!;
        const now = new Date();
        const event = {
          attributes: { specversion: '1.0' as const, id: `mem-${i}`, source: '/herald-bench-scale', type: target.type, time: now.toISOString(), datacontenttype: 'application/json', [ACCOUNT_EXTENSION]: target.account },
          data: Buffer.from(JSON.stringify({ i })),
        };
        const message = toLaneMessage({ kind: 'first', destinationId: target.destinationId, event, publishedAt: now.toISOString() });
        try {
          const outcome = await deliverFromLane(deps, { subscription: 'bench-scale-memory', messageId: String(i), publishTime: now, message });
          const key = outcome.kind === 'attempted' ? `attempted ${outcome.decision}` : outcome.kind;
          outcomes[key] = (outcomes[key] ?? 0) + 1;
        } catch (e) {
          errors++;
          firstError ??= e instanceof Error ? e.message : String(e);
        }
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  await rt.counters.flush();
  (globalThis as { gc?: () => void }).gc?.();
  // BENCH_HEAP_SNAPSHOT=dir: what the instance holds after the run, for Chrome DevTools' memory tab.
  if (process.env.BENCH_HEAP_SNAPSHOT) writeHeapSnapshot(`${process.env.BENCH_HEAP_SNAPSHOT}/deliver-${process.pid}.heapsnapshot`);
  const m = process.memoryUsage();
  return {
    type: 'report',
    outcomes,
    errors,
    ...(firstError !== undefined ? { firstError } : {}),
    seconds: Math.round(seconds * 10) / 10,
    memory: { startRssMiB: startRss, rssMiB: mib(m.rss), maxRssMiB: mib(process.resourceUsage().maxRSS * 1024), heapUsedMiB: mib(m.heapUsed), heapTotalMiB: mib(m.heapTotal), externalMiB: mib(m.external) },
  };
}

async function main(): Promise<void> {
  if (!process.env.PUBSUB_EMULATOR_HOST || !process.env.FIRESTORE_EMULATOR_HOST) throw new Error('PUBSUB_EMULATOR_HOST and FIRESTORE_EMULATOR_HOST must name running emulators');
  const rt = createRuntime(loadConfig(process.env), { log: createLogger({ level: 'ERROR' }) });
  const startRss = mib(process.memoryUsage().rss);
  process.on('message', (m: StartMessage) => {
    if (m.type !== 'start') return;
    deliverAll(rt, m, startRss).then(
      (report) => send(report, () => void rt.close().finally(() => process.exit(0))),
      (e: unknown) => send({ type: 'failed', message: e instanceof Error ? (e.stack ?? e.message) : String(e) }, () => process.exit(1)),
    );
  });
  process.on('disconnect', () => process.exit(0));
  process.on('SIGINT', () => undefined); // The bench handles Ctrl-C.
  send({ type: 'ready', rssMiB: startRss });
}

main().catch((e: unknown) => send({ type: 'failed', message: e instanceof Error ? (e.stack ?? e.message) : String(e) }, () => process.exit(1)));
