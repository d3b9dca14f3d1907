/**
 * `npm run bench -- log [--deliveries N]`: the console's delivery log at scale (issue 26: the
 * first page with 100,000 deliveries stored answers in < 300 ms locally). N delivery records
 * of one destination are written into the Firestore emulator as `deliver` stores them (the
 * DELIVERED first attempts in groups, the rest as documents of their own, in bulk; with the log
 * head deliver keeps beside its counters), then the admin API's
 * pages are timed as the console asks for them: the first page (from the head), a page deep
 * in (by cursor), filtered by status, and the account's queued ones.
 */
import { performance } from 'node:perf_hooks';
import { Firestore } from '@google-cloud/firestore';
import { COLLECTIONS } from '../../shared/firestore-schema';
import { FirestoreDeliveryStore } from '../../shared/adapters/firestore/deliveries/delivery-store';
import { FirestoreCounterStore } from '../../shared/adapters/firestore/counters';
import { DestinationCounters } from '../../shared/app/destinations/destination-counters';
import { DeliveryLogHead } from '../../shared/app/destinations/delivery-log-head';
import { DeliveryRecord } from '../../shared/domain/retry/delivery';
import { headEntryId } from '../../shared/domain/delivery/grouped-outcomes';
import { AddedDelivered } from '../../shared/ports/deliveries';
import { deliveryId } from '../../shared/domain/ids';
import { startLocalStack } from '../../apps/local/stack';
import { createLogger } from '../../shared/log';
import { BenchFailure, BenchHarness, flagsOf, intOption, mark } from './harness';
import { distribution, table } from './stats';

export const LOG_HELP = `Usage: npm run bench -- log [options]
  --deliveries N   delivery records stored for one destination (BENCH_LOG_DELIVERIES; 100000)
  --repeat R       timed requests per page shape (BENCH_LOG_REPEAT; 20)`;

const PROJECT = 'herald-bench-log';
const DESTINATION = 'log-bench';
/** Outcomes handed to the group commit together: about what one commit carries at 100 deliveries a second. */
const GROUPED_AT_ONCE = 4;
/** Issue 26: the first page of the log. */
const FIRST_PAGE_TARGET_MS = 300;

export async function runLogBench(args: string[], harness: BenchHarness): Promise<number> {
  const flags = flagsOf(args);
  const count = intOption('--deliveries', flags['--deliveries'], 'BENCH_LOG_DELIVERIES', 100_000, 1);
  const repeat = intOption('--repeat', flags['--repeat'], 'BENCH_LOG_REPEAT', 20, 1);
  const note = harness.note;
  const emulators = await harness.emulators();
  const stack = await startLocalStack({ port: 0, emulators, env: { ...process.env, HERALD_PROJECT_ID: PROJECT, HERALD_LOG_LEVEL: 'WARNING', HERALD_ALLOW_LOOPBACK: 'true' }, log: createLogger({ level: 'WARNING', write: () => undefined }), onProgress: () => undefined });
  harness.addCleanup('herald', () => stack.stop({ purge: true }));
  const admin = async (path: string, init: RequestInit = {}) => {
    const res = await fetch(`${stack.url}/admin${path}`, { ...init, headers: { authorization: `Bearer ${stack.config.adminToken}`, 'content-type': 'application/json' } });
    const body = (await res.json()) as Record<string, unknown>;
    if (res.status >= 300) throw new BenchFailure(`${path}: HTTP ${res.status} ${JSON.stringify(body).slice(0, 200)}`);
    return body;
  };
  // A loopback URL no event is sent to: the records are written, not delivered.
  await admin(`/destinations/${DESTINATION}`, { method: 'PUT', body: JSON.stringify({ url: 'http://127.0.0.1:9/hook', eventTypes: ['com.example.log'] }) });

  const db = new Firestore({ projectId: PROJECT, ignoreUndefinedProperties: true });
  harness.addCleanup('firestore client', () => db.terminate());
  // Records of their own, and the DELIVERED first attempts deliver groups (adapters/firestore/deliveries/delivery-groups.ts).
  const own = (await db.collection(COLLECTIONS.deliveries).where('destinationId', '==', DESTINATION).count().get()).data().count;
  const groupIds = (await db.collection(COLLECTIONS.deliveryGroups).where('destinations', 'array-contains', DESTINATION).select('ids').get()).docs.reduce((n, d) => n + (d.get('ids') as string[]).length, 0);
  const existing = own + groupIds;
  // Every outcome grouped, as under load (a lone one would be a document of its own).
  const store = new FirestoreDeliveryStore(db, undefined, undefined, { alone: 'group' });
  if (existing < count) {
    note(`writing ${count - existing} delivery records, and the log head deliver keeps with its counters`);
    const writer = db.bulkWriter();
    const start = performance.now();
    // Published in the last hours (the head is looked for in the counters' last 25 h), 10 a second.
    const t0 = Date.now() - count * 100 - 60_000;
    // The head as deliver's writer keeps it (DeliveryLogHead.created), flushed once a simulated minute
    // here rather than every second: the lists written are the same, in fewer writes.
    let simulatedNow = t0;
    const counterStore = new FirestoreCounterStore(db);
    const clock = { now: () => new Date(simulatedNow) };
    const recorder = new DestinationCounters(counterStore, clock, createLogger({ level: 'WARNING', write: () => undefined }), { bucketMs: 60_000, flushMs: 60_000, shard: 1 });
    const logHead = new DeliveryLogHead(counterStore, clock, recorder);
    // DELIVERED outcomes committed as deliver commits them: those finishing during a commit go in the next (about GROUPED_AT_ONCE to a group).
    let inFlight: { record: DeliveryRecord; at: Date; added: Promise<AddedDelivered> }[] = [];
    /** Into the head once written: a grouped record with its group (as deliver does, domain/delivery/grouped-outcomes.ts headEntryId). */
    const intoHead = async () => {
      for (const w of inFlight) {
        const added = await w.added;
        logHead.created(DESTINATION, headEntryId(w.record.id, added.created ? added.group : undefined), w.record.publishedAt!, w.at);
      }
      inFlight = [];
    };
    for (let i = existing; i < count; i++) {
      const at = new Date(t0 + i * 100).toISOString();
      // Mostly delivered, some queued and dead, as a busy destination's log is.
      const status = i % 50 === 0 ? 'DEAD' : i % 20 === 0 ? 'QUEUED' : 'DELIVERED';
      const record: DeliveryRecord = {
        id: deliveryId(DESTINATION, `k${i.toString(36).padStart(8, '0')}`),
        destinationId: DESTINATION,
        eventId: `e-${i}`,
        eventSource: '/bench/log',
        eventType: 'com.example.log',
        status,
        attempts: status === 'DELIVERED' ? 1 : 5,
        publishedAt: at,
        firstAttemptAt: at,
        lastAttemptAt: at,
        ...(status === 'DELIVERED' ? { deliveredAt: at } : { reason: 'HTTP 503 on attempt 5' }),
      };
      simulatedNow = t0 + i * 100 + 20;
      if (status === 'DELIVERED') {
        inFlight.push({ record, at: new Date(simulatedNow), added: store.addDelivered(record) });
        if (inFlight.length >= GROUPED_AT_ONCE) await intoHead();
      } else {
        void writer.set(db.collection(COLLECTIONS.deliveries).doc(record.id), record);
        logHead.created(DESTINATION, record.id, at, new Date(simulatedNow));
      }
      if (i % 600 === 0) await recorder.flushIfDue();
      if (i % 10_000 === 0 && i > existing) note(`  ${i}/${count} (${Math.round(((i - existing) * 1000) / (performance.now() - start))}/s)`);
    }
    await intoHead();
    await recorder.flush();
    await writer.close();
    note(`written in ${Math.round((performance.now() - start) / 1000)} s`);
  }

  const time = async (label: string, path: string) => {
    await admin(path); // warm: the first query of a shape builds the emulator's plan
    const ms: number[] = [];
    let shown = 0;
    for (let i = 0; i < repeat; i++) {
      const t = performance.now();
      const page = await admin(path);
      ms.push(performance.now() - t);
      shown = (page.deliveries as unknown[]).length;
    }
    return { label, shown, ...distribution(ms) };
  };
  const first = await time('first page (50)', `/destinations/${DESTINATION}/deliveries`);
  // Halfway in, by cursor, as someone paging back through the log gets there (10,000 at most).
  const skip = Math.min(10_000, Math.floor(count / 1000) * 500);
  let cursor: string | undefined;
  for (let i = 0; i < skip / 500; i++) cursor = (await admin(`/destinations/${DESTINATION}/deliveries?limit=500${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)).nextCursor as string | undefined;
  const deep = await time(`page after ${skip.toLocaleString('en')} (50, by cursor)`, `/destinations/${DESTINATION}/deliveries${cursor ? `?cursor=${encodeURIComponent(cursor)}` : ''}`);
  const dead = await time('first page, status DEAD', `/destinations/${DESTINATION}/deliveries?status=dead`);
  const queued = await time("account's queued, first page", `/deliveries?status=queued&url=${encodeURIComponent('http://127.0.0.1:9/hook')}`);
  const rows = [first, deep, dead, queued];
  const met = (first.p99 ?? Infinity) < FIRST_PAGE_TARGET_MS;
  process.stdout.write(
    [
      '',
      `Delivery log with ${count.toLocaleString('en')} deliveries stored for one destination, ${repeat} requests each`,
      '',
      table(['page', 'rows', 'p50, ms', 'p99, ms', 'max, ms'], rows.map((r) => [r.label, r.shown, r.p50, r.p99, r.max])),
      '',
      `first page p99 ${first.p99} ms — target < ${FIRST_PAGE_TARGET_MS} ms: ${mark(met)}`,
      JSON.stringify({ bench: 'log', deliveries: count, repeat, pages: rows, met }),
      '',
    ].join('\n'),
  );
  return rows.every((r) => r.shown > 0) ? 0 : 1;
}
