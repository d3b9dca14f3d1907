import { MemoryDeadLetterQueue } from '../../shared/adapters/memory/dead-letter-queue';
import { MemoryDeliveryStore } from '../../shared/adapters/memory/delivery-store';
import { MemoryReplayStore } from '../../shared/adapters/memory/replay-store';
import { AdminResult } from '../../functions/admin/route';
import { statusOf } from '../../functions/http';
import { ReplayDeps } from '../../shared/app/retry/replay-run';
import { handleReplayTrigger } from '../../shared/app/retry/replay-trigger';
import { getReplay, listReplays, postReplay, ReplaysAdminDeps } from '../../shared/app/admin/replays-admin';
import { run } from '../../apps/cli/main';
import { toPubSubMessage } from '../../shared/domain/events/cloudevents-pubsub';
import { DeliveryRecord } from '../../shared/domain/retry/delivery';
import type { ReplayView } from '../../shared/domain/replay/replay';
import { createLogger } from '../../shared/log';
import { systemClock } from '../../shared/ports/clock';
import { harness, Sent } from '../support/cli-harness';
import { MemoryDestinationStore } from '../../shared/adapters/memory/destination-store';
import { webhookDestination } from '../support/destinations';

/**
 * `herald replay` and `herald replays list|show` in-process: the CLI's fetch answered by the
 * real admin use cases, and each published trigger run by the real replay use case, over
 * memory stores and a memory dead-letter subscription.
 */

const HOUR = 3_600_000;

async function world() {
  const destinations = new MemoryDestinationStore();
  await destinations.put(webhookDestination('orders'));
  const deliveries = new MemoryDeliveryStore();
  const replays = new MemoryReplayStore();
  const queue = new MemoryDeadLetterQueue();
  const log = createLogger({ write: () => undefined });
  const replayDeps: ReplayDeps = { replays, deadLetters: queue, deliveries, destinations, clock: systemClock, log, runMs: 60_000, leaseMs: 600_000, pullBatch: 10, progressEveryMs: 0 };
  let published = 0;
  const admin: ReplaysAdminDeps = {
    replays,
    replayTopic: 'herald-replay',
    clock: systemClock,
    log,
    // The replay function, as the trigger's push subscription would call it, a moment later.
    bus: {
      publish: async (_topic, message) => {
        const messageId = `m-${++published}`;
        setTimeout(() => void handleReplayTrigger(replayDeps, { subscription: 'herald-replay-trigger', messageId, publishTime: new Date(), message }), 30);
        return messageId;
      },
    },
  };
  const events: [string, string][] = [
    ['e1', 'com.example.order.created'],
    ['e2', 'com.example.order.paid'],
    ['e3', 'com.example.user.created'],
  ];
  for (const [i, [id, type]] of events.entries()) {
    const event = { attributes: { specversion: '1.0' as const, id, source: '/shop', type, time: '2026-11-23T13:00:00.000Z' }, data: Buffer.from('{}') };
    const record: DeliveryRecord = { id: `orders.key-${id}`, destinationId: 'orders', eventId: id, eventSource: '/shop', eventType: type, status: 'DEAD', attempts: 3, event };
    await deliveries.put(record);
    queue.add(toPubSubMessage(event, { destination: 'orders', 'delivery-id': record.id, attempts: '3' }), new Date(Date.now() - HOUR + i * 60_000));
  }
  const api = async (req: Sent): Promise<Response> => {
    const url = new URL(req.url);
    let result: AdminResult;
    const one = /^\/admin\/replays\/([^/]+)$/.exec(url.pathname);
    if (req.method === 'POST' && url.pathname === '/admin/replays') result = await postReplay(admin, JSON.parse(req.body!.toString()) as unknown);
    else if (req.method === 'GET' && one) result = await getReplay(admin, decodeURIComponent(one[1]!));
    else if (req.method === 'GET' && url.pathname === '/admin/replays') result = await listReplays(admin, Object.fromEntries(url.searchParams));
    else return Response.json({ error: `no admin route ${req.method} ${url.pathname}` }, { status: 404 });
    return 'body' in result ? Response.json(result.body, { status: statusOf(result.kind) }) : new Response(null, { status: statusOf(result.kind) });
  };
  return { api, queue, deliveries, replays };
}

const posted = (h: ReturnType<typeof harness>) => h.sent.filter((s) => s.method === 'POST').map((s) => JSON.parse(s.body!.toString()) as Record<string, unknown>);

test('herald replay posts the request, follows the report and prints it with each replayed dead letter', async () => {
  const w = await world();
  const h = harness(w.api);
  const before = Date.now();
  expect(await h.run(['replay', '--destination', 'orders', '--since', '2h', '--type', 'com.example.order.*', '--poll-ms', '20'])).toBe(0);
  const [request] = posted(h);
  expect(Object.keys(request!).sort()).toEqual(['destination', 'eventTypes', 'since']);
  expect(request).toMatchObject({ destination: 'orders', eventTypes: ['com.example.order.*'] });
  const since = Date.parse(request!.since as string);
  expect(since).toBeGreaterThanOrEqual(before - 2 * HOUR - 1000);
  expect(since).toBeLessThanOrEqual(Date.now() - 2 * HOUR);

  expect(h.stdout()).toMatch(/^replay replay-\d{8}-\d{6}-[a-z0-9]{6} done: 2 matched, 2 redelivered, 0 skipped, 0 failed\n/);
  expect(h.stdout()).toMatch(/DELIVERY ID +EVENT ID +TYPE +DESTINATION +DEAD-LETTERED AT +OUTCOME\norders\.key-e1 +e1 +com\.example\.order\.created +orders +\S+ +redelivered\norders\.key-e2 /);
  // Progress on stderr: plain lines (not a terminal), the last one the end state.
  expect(h.stderr()).toMatch(/replay replay-\S+: done — 3 read, 2 matched, 2 redelivered, 0 skipped, 0 failed/);
  expect(h.stderr()).toMatch(/follow them with: herald deliveries list orders/);
  expect(w.queue.remaining()).toHaveLength(1);
  expect((await w.deliveries.get('orders.key-e1'))!.status).toBe('PENDING');
});

test('--dry-run --json prints the report as JSON and changes nothing', async () => {
  const w = await world();
  const h = harness(w.api);
  const until = new Date(Date.now() - HOUR + 90_000).toISOString();
  expect(await h.run(['replay', '--destination', 'orders', '--since', '1d', '--until', until, '--limit', '5', '--dry-run', '--json', '--poll-ms', '20'])).toBe(0);
  expect(posted(h)[0]).toMatchObject({ destination: 'orders', until, limit: 5, dryRun: true });
  const report = JSON.parse(h.stdout()) as ReplayView;
  expect(report).toMatchObject({ status: 'done', dryRun: true, matched: 2, wouldRedeliver: 2, redelivered: 0 });
  expect(report.items.map((i) => [i.eventId, i.outcome])).toEqual([
    ['e1', 'would-redeliver'],
    ['e2', 'would-redeliver'],
  ]);
  expect(h.stderr()).toMatch(/dry run: nothing was redelivered/);
  expect(w.queue.remaining()).toHaveLength(3);
  expect((await w.deliveries.get('orders.key-e1'))!.status).toBe('DEAD');
});

test('--no-wait prints the id and returns; replays list and show read the reports', async () => {
  const w = await world();
  const h = harness(w.api);
  expect(await h.run(['replay', '--destination', 'orders', '--since', '2026-11-01T00:00:00+01:00', '--no-wait'])).toBe(0);
  const id = h.stdout().trim();
  expect(id).toMatch(/^replay-/);
  expect(posted(h)[0]).toMatchObject({ since: '2026-10-31T23:00:00.000Z' });
  await new Promise((r) => setTimeout(r, 200));

  const list = harness(w.api);
  expect(await list.run(['replays', 'list'])).toBe(0);
  expect(list.stdout()).toMatch(/ID +STATUS +DESTINATION +CREATED AT +MATCHED +REDELIVERED +SKIPPED +FAILED\nreplay-\S+ +done +orders +\S+ +3 +3 +0 +0/);
  const show = harness(w.api);
  expect(await show.run(['replays', 'show', id])).toBe(0);
  expect(JSON.parse(show.stdout())).toMatchObject({ id, status: 'done', matched: 3 });
  const missing = harness(w.api);
  expect(await missing.run(['replays', 'show', 'nope'])).toBe(1);
  expect(missing.stderr()).toMatch(/herald: no replay "nope"\nhint: see the replays there are with: herald replays list/);
});

test.each<[string, string[], RegExp]>([
  ['no --destination', ['--since', '2h'], /required option '--destination <id>' not specified/],
  ['no --since', ['--destination', 'orders'], /required option '--since <time>' not specified/],
  ['a --since that is no time', ['--destination', 'orders', '--since', 'yesterday'], /--since: must be an ISO 8601 time with a zone .* or a time ago such as 90s, 30m, 2h, 7d/],
  ['a bad destination id', ['--destination', 'Orders!', '--since', '2h'], /--destination: a destination id is/],
  ['--limit 0', ['--destination', 'orders', '--since', '2h', '--limit', '0'], /--limit: must be a whole number from 1 to 100000/],
  ['--until before --since', ['--destination', 'orders', '--since', '2026-11-23T14:00:00Z', '--until', '2026-11-23T13:00:00Z'], /--until: must not be before --since/],
])('%s is a usage error (exit 2) and sends nothing', async (_, args, message) => {
  const h = harness();
  expect(await h.run(['replay', ...args])).toBe(2);
  expect(h.stderr()).toMatch(message);
  expect(h.sent).toHaveLength(0);
});

test('a refused request (409: a replay is running) is exit 1 with Herald\'s message', async () => {
  const h = harness(() => Response.json({ error: 'replay r0 is running (since 2026-11-23T14:00:00.000Z); wait for it to end' }, { status: 409 }));
  expect(await h.run(['replay', '--destination', 'orders', '--since', '2h'])).toBe(1);
  expect(h.stderr()).toMatch(/herald: replay r0 is running/);
});

test('a replay that failed is exit 1, after its report', async () => {
  const failed = { id: 'r1', status: 'failed', request: { destination: 'orders' }, dryRun: false, via: 'admin', createdAt: '2026-11-23T14:00:00.000Z', updatedAt: '2026-11-23T14:00:01.000Z', runs: 1, scanned: 0, matched: 0, redelivered: 0, wouldRedeliver: 0, skipped: 0, failed: 0, skippedBy: {}, items: [], itemsOmitted: 0, error: 'replay stopped by a fault: pubsub unavailable' };
  const h = harness((req) => (req.method === 'POST' ? Response.json({ id: 'r1', status: 'queued' }, { status: 202 }) : Response.json(failed)));
  expect(await h.run(['replay', '--destination', 'orders', '--since', '2h', '--poll-ms', '20'])).toBe(1);
  expect(h.stdout()).toMatch(/^replay r1 failed: 0 matched/);
  expect(h.stderr()).toMatch(/herald: replay r1 failed: replay stopped by a fault: pubsub unavailable/);
});

test('on a terminal the progress is a cli-progress bar', async () => {
  const w = await world();
  let err = '';
  let out = '';
  const tty = { isTTY: true, columns: 120, write: (s: string) => ((err += s), true), cursorTo: () => true, clearLine: () => true, moveCursor: () => true, on: () => tty, removeListener: () => tty };
  const code = await run(['replay', '--destination', 'orders', '--since', '2h', '--poll-ms', '20'], {
    stdout: { write: (s: string) => (out += s) },
    stderr: tty,
    env: { HERALD_ADMIN_TOKEN: 'admin-token' },
    fetch: (async (url: string | URL, init?: RequestInit) => w.api({ url: String(url), method: init?.method ?? 'GET', headers: {}, body: init?.body ? Buffer.from(init.body as string) : undefined })) as typeof fetch,
  });
  expect(code).toBe(0);
  expect(err).toMatch(/replay replay-\S+ done \[[█░]+\] 3\/3 matched of read \| 3 redelivered, 0 skipped, 0 failed/);
  expect(out).toMatch(/done: 3 matched, 3 redelivered/);
});
