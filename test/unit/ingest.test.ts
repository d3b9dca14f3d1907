import { DestinationDirectory } from '../../shared/app/destinations/destination-directory';
import { ingest, IngestDeps } from '../../shared/app/intake/ingest';
import { unbundle } from '../../shared/app/lanes/lanes';
import { readJournalled } from '../../shared/domain/intake/lane-reference';
import { IntakeJournal } from '../../shared/app/intake/intake-journal';
import { MemoryIntakeStore } from '../../shared/adapters/memory/intake-store';
import { PubSubMessage } from '../../shared/domain/events/cloudevents-pubsub';
import { applySpec, destinationSpecSchema } from '../../shared/domain/destinations/destination';
import { createLogger } from '../../shared/log';
import { systemClock } from '../../shared/ports/clock';
import { laneTopology, sharedLaneFor } from '../../shared/topology';
import { MemoryDestinationStore } from '../../shared/adapters/memory/destination-store';

/** Ingest fans each accepted event out onto the lanes itself (no events topic, no `route` hop). */

const names = { prefix: 'herald' };
const batch = (events: { id: string; type: string }[]) => Buffer.from(JSON.stringify(events.map((e) => ({ specversion: '1.0', source: '/shop', data: { n: e.id }, ...e }))));
const BATCH = { 'content-type': 'application/cloudevents-batch+json' };

async function world(options: { failFor?: string } = {}) {
  const destinations = new MemoryDestinationStore();
  const add = (id: string, spec: Record<string, unknown>) => destinations.put(applySpec(id, destinationSpecSchema.parse(spec), undefined, new Date('2026-11-25T09:00:00Z')));
  await add('orders', { url: 'https://hooks.example.com/orders', eventTypes: ['com.example.order.*'] });
  await add('audit', { url: 'https://hooks.example.com/audit', eventTypes: ['*'], lane: 'dedicated' });
  await add('billing', { url: 'https://hooks.example.com/billing', eventTypes: ['com.example.invoice.paid'] });
  const published: { topic: string; message: PubSubMessage }[] = [];
  const store = new MemoryIntakeStore();
  const logs: Record<string, unknown>[] = [];
  const log = createLogger({ level: 'DEBUG', write: (line) => logs.push(JSON.parse(line) as Record<string, unknown>) });
  const deps: IngestDeps = {
    bus: {
      publish: async (topic, message) => {
        if (message.attributes['herald-destination'] === options.failFor) throw new Error(`14 UNAVAILABLE: pubsub down (${topic} in projects/herald-dev/topics/${topic})`);
        return String(published.push({ topic, message }));
      },
    },
    lanes: { ensureLane: async () => undefined, removeLane: async () => undefined },
    names,
    directory: new DestinationDirectory(destinations, systemClock, 0),
    journal: new IntakeJournal(store, systemClock, undefined, undefined, log),
    clock: systemClock,
    log,
    maxBodyBytes: 100_000,
    maxEventBytes: 10_000,
  };
  return { deps, published, store, logs, destinations };
}

/**
 * A 503 says what to do and a generic cause: no Pub/Sub or Firestore text, gRPC code name or
 * topic path (issue 50); those are in the log line its errorId names.
 */
function expectNoInternals(body: unknown, logs: Record<string, unknown>[]) {
  const text = JSON.stringify(body);
  expect(text).not.toMatch(/projects\/|topics\/|UNAVAILABLE|firestore|pubsub/i);
  const { errorId } = body as { errorId: string };
  expect(errorId).toMatch(/^[0-9a-f-]{36}$/);
  expect(JSON.stringify(logs.filter((l) => l.errorId === errorId))).toMatch(/UNAVAILABLE/);
}

describe('ingest', () => {
  it("publishes each event once onto the first-attempt lane of every destination that takes it, with the destination, intake batch and acceptance time", async () => {
    const { deps, published, store } = await world();
    const before = Date.now();
    const result = await ingest(deps, BATCH, batch([{ id: 'e1', type: 'com.example.order.created' }, { id: 'e2', type: 'com.example.invoice.paid' }]));
    expect(result).toEqual({ kind: 'accepted', body: { accepted: ['e1', 'e2'] } });
    // audit takes both: one bundle of the two (a test below); read back, each event's own lane message.
    const messages = (await Promise.all(published.map(async (p) => ((await unbundle(p.message)) ?? { ok: true as const, members: [p.message] }) as { ok: true; members: PubSubMessage[] } | { ok: false }))).flatMap((r, i) => (r.ok ? r.members.map((message) => ({ topic: published[i]!.topic, message })) : []));
    expect(messages).toHaveLength(4);
    const sent = messages.map((p) => ({ topic: p.topic, id: p.message.attributes['ce-id'], to: p.message.attributes['herald-destination'] }));
    expect(sent.sort((a, b) => `${a.id}${a.to}`.localeCompare(`${b.id}${b.to}`))).toEqual([
      { topic: laneTopology('audit', names).topic.name, id: 'e1', to: 'audit' },
      { topic: sharedLaneFor('orders', 'first', names), id: 'e1', to: 'orders' },
      { topic: laneTopology('audit', names).topic.name, id: 'e2', to: 'audit' },
      { topic: sharedLaneFor('billing', 'first', names), id: 'e2', to: 'billing' },
    ]);
    expect(store.writes).toHaveLength(1);
    for (const p of messages) {
      expect(p.message.attributes['herald-intake']).toBe(store.writes[0]!.id);
      expect(Date.parse(p.message.attributes['herald-published-at']!)).toBeGreaterThanOrEqual(before - 1);
    }
  });

  it('a request that says it resends (Herald-Resend: 1) marks every lane message, bundled or not, so its first attempts read first; another value is refused', async () => {
    const { deps, published } = await world();
    const events = batch([{ id: 'e1', type: 'com.example.order.created' }, { id: 'e2', type: 'com.example.invoice.paid' }]);
    const read = async () => (await Promise.all(published.map(async (p) => ((await unbundle(p.message)) ?? { ok: true as const, members: [p.message] }) as { ok: true; members: PubSubMessage[] } | { ok: false }))).flatMap((r) => (r.ok ? r.members : []));
    expect(await ingest(deps, { ...BATCH, 'herald-resend': '1' }, events)).toEqual({ kind: 'accepted', body: { accepted: ['e1', 'e2'] } });
    const resent = await read();
    expect(resent).toHaveLength(4);
    for (const m of resent) expect(m.attributes['herald-resent']).toBe('1');
    published.length = 0;
    expect(await ingest(deps, BATCH, events)).toEqual({ kind: 'accepted', body: { accepted: ['e1', 'e2'] } });
    for (const m of await read()) expect(m.attributes).not.toHaveProperty('herald-resent');
    published.length = 0;
    expect(await ingest(deps, { ...BATCH, 'herald-resend': 'yes' }, events)).toEqual({
      kind: 'invalid',
      body: { error: 'invalid Herald-Resend header', issues: [{ path: 'headers.herald-resend', message: expect.stringMatching(/must be 1 or true/) }] },
    });
    expect(published).toEqual([]);
  });

  it('accepts and journals an event no destination takes, publishes nothing, and says so in the log', async () => {
    const { deps, published, store, logs, destinations } = await world();
    await destinations.delete('audit');
    const result = await ingest(deps, BATCH, batch([{ id: 'lonely', type: 'com.example.nobody.cares' }]));
    expect(result).toEqual({ kind: 'accepted', body: { accepted: ['lonely'] } });
    expect(published).toEqual([]);
    expect(store.writes.flatMap((w) => w.events.map((e) => e.attributes.id))).toEqual(['lonely']);
    expect(logs).toContainEqual(expect.objectContaining({ severity: 'INFO', message: 'event accepted; no destination subscribes to its type', eventId: 'lonely' }));
  });

  it('a lane that cannot be published to: the events bound for it are named failed (503), the others accepted', async () => {
    const { deps, logs } = await world({ failFor: 'billing' });
    const result = await ingest(deps, BATCH, batch([{ id: 'e1', type: 'com.example.order.created' }, { id: 'e2', type: 'com.example.invoice.paid' }]));
    expect(result.kind).toBe('unavailable');
    expect(result.body).toMatchObject({ accepted: ['e1'], failed: [{ id: 'e2', error: "Herald's queue did not take the events" }] });
    expectNoInternals(result.body, logs);
  });

  it('the registry unreadable: 503, nothing journaled, nothing published', async () => {
    const { deps, published, store, logs } = await world();
    class Unreadable extends MemoryDestinationStore {
      override list(): Promise<never> {
        return Promise.reject(new Error('14 UNAVAILABLE: firestore down at projects/herald-dev/databases/(default)/documents/destinations'));
      }
    }
    deps.directory = new DestinationDirectory(new Unreadable(), systemClock, 0);
    const result = await ingest(deps, BATCH, batch([{ id: 'e1', type: 'com.example.order.created' }]));
    expect(result).toEqual({ kind: 'unavailable', retryAfterSeconds: 1, body: { error: expect.stringMatching(/resend/), errorId: expect.any(String), accepted: [], failed: [{ id: 'e1', error: "Herald's storage is busy" }] } });
    expectNoInternals(result.body, logs);
    expect(published).toEqual([]);
    expect(store.writes).toEqual([]);
  });

  it('the journal refused: 503 with a generic cause, the Firestore error in the log only', async () => {
    const { deps, store, logs } = await world();
    store.failing = Object.assign(new Error('14 UNAVAILABLE: No connection established. Last error: connect ECONNREFUSED (projects/herald-dev/databases/(default)/documents/intake)'), { code: 14 });
    const result = await ingest(deps, BATCH, batch([{ id: 'e1', type: 'com.example.order.created' }]));
    expect(result).toMatchObject({ kind: 'unavailable', body: { error: expect.stringMatching(/resend them/), accepted: [], failed: [{ id: 'e1', error: "Herald's storage is busy" }] } });
    expectNoInternals(result.body, logs);
  });

  describe('a journal write that failed is read back (issue 51 item 9a)', () => {
    const deadline = () => Object.assign(new Error('4 DEADLINE_EXCEEDED: reply lost'), { code: 4 });

    it('its reply lost, it had landed: the events are accepted (202), written once, and the log says so', async () => {
      const { deps, store, logs, published } = await world();
      store.loseNextReply = deadline();
      const holds = jest.spyOn(store, 'holds');
      const result = await ingest(deps, BATCH, batch([{ id: 'e1', type: 'com.example.order.created' }]));
      expect(result).toEqual({ kind: 'accepted', body: { accepted: ['e1'] } });
      expect(store.writes).toHaveLength(1);
      expect(holds).toHaveBeenCalledTimes(1);
      expect(published.map((p) => p.message.attributes['herald-intake'])).toEqual([store.writes[0]!.id, store.writes[0]!.id]);
      expect(logs).toContainEqual(expect.objectContaining({ severity: 'WARNING', message: expect.stringMatching(/had landed/), intake: store.writes[0]!.id }));
    });

    it('not there: written once more, and accepted when that lands', async () => {
      const { deps, store } = await world();
      store.failNext = deadline();
      const result = await ingest(deps, BATCH, batch([{ id: 'e1', type: 'com.example.order.created' }]));
      expect(result).toEqual({ kind: 'accepted', body: { accepted: ['e1'] } });
      expect(store.writes).toHaveLength(1);
    });

    it('the read fails too: 503, and the answer and the log say the events may be sent again', async () => {
      const { deps, store, logs } = await world();
      store.failing = deadline();
      store.failHolds = Object.assign(new Error('14 UNAVAILABLE: read failed'), { code: 14 });
      const result = await ingest(deps, BATCH, batch([{ id: 'e1', type: 'com.example.order.created' }]));
      expect(result).toMatchObject({ kind: 'unavailable', body: { error: expect.stringMatching(/resend them \(a destination that had one already may receive it again, with the same webhook-id\)/), accepted: [] } });
      expect(logs).toContainEqual(expect.objectContaining({ severity: 'ERROR', stored: 'unknown', readError: expect.stringMatching(/read failed/) }));
    });

    it('a normal write reads nothing back', async () => {
      const { deps, store } = await world();
      const holds = jest.spyOn(store, 'holds');
      expect((await ingest(deps, BATCH, batch([{ id: 'e1', type: 'com.example.order.created' }]))).kind).toBe('accepted');
      expect(holds).not.toHaveBeenCalled();
    });
  });

  it("sends a request's several events for one pushed destination as one bundle on its lane (one push), and its lone events as they are", async () => {
    const { deps, published } = await world();
    const result = await ingest(deps, BATCH, batch([{ id: 'e1', type: 'com.example.order.created' }, { id: 'e2', type: 'com.example.order.paid' }, { id: 'e3', type: 'com.example.invoice.paid' }]));
    expect(result).toEqual({ kind: 'accepted', body: { accepted: ['e1', 'e2', 'e3'] } });
    const by = (to: string) => published.filter((p) => p.message.attributes['herald-destination'] === to).map((p) => [p.topic, p.message.attributes['herald-bundle'] ?? p.message.attributes['ce-id']]);
    expect(by('orders')).toEqual([[sharedLaneFor('orders', 'first', names), '2']]);
    expect(by('audit')).toEqual([[laneTopology('audit', names).topic.name, '3']]);
    expect(by('billing')).toEqual([[sharedLaneFor('billing', 'first', names), 'e3']]);
    const read = await unbundle(published.find((p) => p.message.attributes['herald-destination'] === 'orders')!.message);
    expect(read?.ok && read.members.map((m) => [m.attributes['ce-id'], m.attributes['herald-destination'], m.attributes['herald-intake'] !== undefined, m.attributes['herald-published-at'] !== undefined])).toEqual([
      ['e1', 'orders', true, true],
      ['e2', 'orders', true, true],
    ]);
  });

  describe('a batched destination', () => {
    const bundled = async (failFor?: string) => {
      const w = await world(failFor ? { failFor } : {});
      await w.destinations.put(applySpec('feed', destinationSpecSchema.parse({ url: 'https://hooks.example.com/feed', eventTypes: ['com.example.order.*'], batch: { maxEvents: 100, maxWaitMs: 1000 } }), undefined, new Date()));
      return w;
    };
    const three = batch([{ id: 'e1', type: 'com.example.order.created' }, { id: 'e2', type: 'com.example.order.paid' }, { id: 'e3', type: 'com.example.invoice.paid' }]);

    it("gets a request's events for it as one compressed bundle on the batch lane, which reads back as their lane messages", async () => {
      const { deps, published } = await bundled();
      expect(await ingest(deps, BATCH, three)).toEqual({ kind: 'accepted', body: { accepted: ['e1', 'e2', 'e3'] } });
      const toFeed = published.filter((p) => p.message.attributes['herald-destination'] === 'feed');
      expect(toFeed).toHaveLength(1);
      expect(toFeed[0]!.topic).toBe('herald-batch');
      expect(toFeed[0]!.message.attributes['herald-bundle']).toBe('2');
      const read = await unbundle(toFeed[0]!.message);
      expect(read?.ok).toBe(true);
      const members = read?.ok ? read.members : [];
      expect(members.map((m) => [m.attributes['ce-id'], m.attributes['herald-destination'], m.attributes['herald-intake'] !== undefined])).toEqual([['e1', 'feed', true], ['e2', 'feed', true]]);
      expect(members.map((m) => JSON.parse(m.data.toString()))).toEqual([{ n: 'e1' }, { n: 'e2' }]);
    });

    it('one event for it goes as a lane message of its own', async () => {
      const { deps, published } = await bundled();
      await ingest(deps, BATCH, batch([{ id: 'e1', type: 'com.example.order.created' }]));
      const toFeed = published.filter((p) => p.message.attributes['herald-destination'] === 'feed');
      expect(toFeed.map((p) => [p.topic, p.message.attributes['ce-id'], p.message.attributes['herald-bundle']])).toEqual([['herald-batch', 'e1', undefined]]);
    });

    it('with batches by reference, 16 or more events for it go named in the journal (published once it holds them), fewer as a bundle', async () => {
      const { deps, published, store } = await bundled();
      deps.batchesByReference = true;
      const many = batch(Array.from({ length: 17 }, (_, i) => ({ id: `e${i}`, type: i === 5 ? 'com.example.invoice.paid' : 'com.example.order.created' })));
      expect((await ingest(deps, BATCH, many)).kind).toBe('accepted');
      const toFeed = published.filter((p) => p.message.attributes['herald-destination'] === 'feed');
      expect(toFeed).toHaveLength(1);
      const ref = readJournalled(toFeed[0]!.message);
      expect(ref?.ok).toBe(true);
      const { intake, places } = ref?.ok ? ref.value : { intake: '', places: [] };
      // The journal held the batch before the reference went out, with the places it names kept for the reconciler.
      const journaled = store.writes.find((b) => b.id === intake)!;
      expect(journaled.refs).toEqual({ feed: places });
      expect(places.map((p) => journaled.events[p]!.attributes.id)).toEqual(Array.from({ length: 17 }, (_, i) => `e${i}`).filter((id) => id !== 'e5'));
      expect(toFeed[0]!.message.data.byteLength).toBeLessThan(100);
      published.length = 0;
      await ingest(deps, BATCH, three);
      expect(published.filter((p) => p.message.attributes['herald-destination'] === 'feed').map((p) => p.message.attributes['herald-bundle'])).toEqual(['2']);
    });

    it('with batches by reference, none is published when the journal cannot record the events', async () => {
      const { deps, published, store } = await bundled();
      deps.batchesByReference = true;
      store.failing = new Error('14 UNAVAILABLE: firestore down');
      store.failHolds = new Error('14 UNAVAILABLE: firestore down');
      const many = batch(Array.from({ length: 16 }, (_, i) => ({ id: `e${i}`, type: 'com.example.order.created' })));
      expect((await ingest(deps, BATCH, many)).kind).toBe('unavailable');
      expect(published.filter((p) => p.message.attributes['herald-destination'] === 'feed')).toEqual([]);
    });

    it("a bundle that cannot be published fails each of its events (503), and only those", async () => {
      const { deps, logs } = await bundled('feed');
      const result = await ingest(deps, BATCH, three);
      expect(result.kind).toBe('unavailable');
      expect(result.body).toMatchObject({ accepted: ['e3'], failed: [{ id: 'e1', error: "Herald's queue did not take the events" }, { id: 'e2', error: "Herald's queue did not take the events" }] });
      expectNoInternals(result.body, logs);
    });
  });
});
