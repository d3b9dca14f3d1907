import { CATALOGUE_REFRESH_MS, EventTypeCatalogue, SAMPLE_MAX_BYTES, sampleOf } from '../../shared/app/destinations/event-type-samples';
import { ingest } from '../../shared/app/intake/ingest';
import { IntakeJournal } from '../../shared/app/intake/intake-journal';
import { DestinationDirectory } from '../../shared/app/destinations/destination-directory';
import { reconcileOnce } from '../../shared/app/intake/reconcile';
import { MemoryEventTypeStore } from '../../shared/adapters/memory/event-type-store';
import { MemoryIntakeStore } from '../../shared/adapters/memory/intake-store';
import { MemoryDeliveryStore } from '../../shared/adapters/memory/delivery-store';
import { SHARD_MAX_BYTES, SMALL_SAMPLE_BYTES } from '../../shared/domain/events/event-type-catalogue';
import { HeraldEvent } from '../../shared/domain/events/event';
import { IntakeBatch } from '../../shared/domain/intake/intake';
import { createLogger } from '../../shared/log';
import { systemClock } from '../../shared/ports/clock';
import { MemoryDestinationStore } from '../../shared/adapters/memory/destination-store';

function event(id: string, type: string, data: unknown = { id }, account?: string): HeraldEvent {
  return { attributes: { specversion: '1.0', id, source: '/shop', type, datacontenttype: 'application/json', ...(account ? { heraldaccount: account } : {}) }, data: Buffer.from(JSON.stringify(data)) };
}

function logged() {
  const lines: Record<string, unknown>[] = [];
  return { lines, log: createLogger({ level: 'DEBUG', write: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) }) };
}

let batchNo = 0;
function batch(acceptedAt: string, events: HeraldEvent[]): IntakeBatch {
  return { id: `${acceptedAt}-${batchNo++}`, acceptedAt, events };
}

const T0 = Date.parse('2026-11-26T10:00:00Z');
const at = (ms: number) => new Date(T0 + ms).toISOString();

describe('EventTypeCatalogue', () => {
  it('one write per account per round, whatever the number of types; the latest event of each type is its sample', async () => {
    const store = new MemoryEventTypeStore();
    const catalogue = new EventTypeCatalogue(store, logged().log);
    // The sparse case: 500 types of one account, one event each, in 100 batches of one round.
    const batches = Array.from({ length: 100 }, (_, b) => batch(at(b * 10), Array.from({ length: 5 }, (_, i) => event(`e${b * 5 + i}`, `com.example.t${b * 5 + i}`))));
    batches.push(batch(at(2000), [event('o-1', 'com.example.order', undefined, 'acme'), event('g-1', 'com.example.order', undefined, 'globex')]), batch(at(3000), [event('o-2', 'com.example.order', undefined, 'acme')]));
    expect(await catalogue.observe(batches)).toEqual({ written: 502 });
    // default's 500 types in one document; acme's and globex's in one each.
    expect(store.writes).toBe(3);
    expect(await store.list('default')).toHaveLength(500);
    expect((await store.list('acme')).map((s) => [s.type, s.sample.id, s.lastSeenAt])).toEqual([['com.example.order', 'o-2', at(3000)]]);
    expect((await store.list('globex')).map((s) => s.sample)).toEqual([expect.objectContaining({ id: 'g-1', heraldaccount: 'globex', data: { id: 'g-1' } })]);
  });

  it('a type seen again within the refresh interval costs nothing; after it, its lastSeenAt and sample are rewritten', async () => {
    const store = new MemoryEventTypeStore();
    const catalogue = new EventTypeCatalogue(store, logged().log);
    await catalogue.observe([batch(at(0), [event('a', 'com.example.x'), event('p', 'com.example.y')])]);
    expect(store.writes).toBe(1);
    const before = store.writes;
    // The same batch again (a postponed one, read in the next round) and newer events within the hour.
    for (let m = 1; m < 60; m++) await catalogue.observe([batch(at(m * 60_000 - 1), [event(`a${m}`, 'com.example.x'), event(`p${m}`, 'com.example.y')])]);
    expect(store.writes).toBe(before);
    expect(store.knownReads).toBe(1);
    await catalogue.observe([batch(at(CATALOGUE_REFRESH_MS), [event('late', 'com.example.x')])]);
    expect(store.writes).toBe(before + 1);
    const listed = await store.list('default');
    expect(listed.map((s) => [s.type, s.sample.id, s.lastSeenAt])).toEqual([
      ['com.example.x', 'late', at(CATALOGUE_REFRESH_MS)],
      ['com.example.y', 'p', at(0)],
    ]);
    // An older batch (a backlog) never moves a type back.
    await catalogue.observe([batch(at(-5000), [event('old', 'com.example.new')]), batch(at(10), [event('old-x', 'com.example.x')])]);
    expect((await store.list('default')).find((s) => s.type === 'com.example.x')!.sample.id).toBe('late');
  });

  it('after a restart it reads an account once, and writes only what the catalogue does not hold yet', async () => {
    const store = new MemoryEventTypeStore();
    await new EventTypeCatalogue(store, logged().log).observe([batch(at(0), [event('a', 'com.example.x'), event('b', 'com.example.y', undefined, 'acme')])]);
    const writes = store.writes;
    const reads = store.knownReads;
    const restarted = new EventTypeCatalogue(store, logged().log);
    await restarted.observe([batch(at(1000), [event('a2', 'com.example.x'), event('b2', 'com.example.y', undefined, 'acme')])]);
    await restarted.observe([batch(at(2000), [event('a3', 'com.example.x'), event('b3', 'com.example.y', undefined, 'acme')])]);
    expect(store.writes).toBe(writes);
    // One read per account, not per round.
    expect(store.knownReads).toBe(reads + 2);
    await restarted.observe([batch(at(3000), [event('c', 'com.example.z')])]);
    expect(store.writes).toBe(writes + 1);
  });

  it('never rejects: a failed write is logged as a warning and its types are written by the next round', async () => {
    const { lines, log } = logged();
    const store = new MemoryEventTypeStore();
    let fail = true;
    const flaky = { known: (a: string) => store.known(a), record: (a: string, e: Parameters<MemoryEventTypeStore['record']>[1]) => (fail ? Promise.reject(new Error('14 UNAVAILABLE: firestore down')) : store.record(a, e)) };
    const catalogue = new EventTypeCatalogue(flaky, log);
    expect(await catalogue.observe([batch(at(0), [event('a', 'com.example.x', undefined, 'acme')])])).toEqual({ written: 0 });
    expect(lines).toContainEqual(expect.objectContaining({ severity: 'WARNING', account: 'acme', types: 1, error: expect.stringMatching(/UNAVAILABLE/) as unknown }));
    fail = false;
    // The next round has no batch of acme at all (the reconciler removed the first): the type comes anyway.
    expect(await catalogue.observe([batch(at(5000), [event('b', 'com.example.y')])])).toEqual({ written: 2 });
    expect((await store.list('acme')).map((s) => [s.type, s.sample.id])).toEqual([['com.example.x', 'a']]);
    // A failed read too.
    const unreadable = new EventTypeCatalogue({ known: () => Promise.reject(new Error('deadline exceeded')), record: (a, e) => store.record(a, e) }, log);
    expect(await unreadable.observe([batch(at(0), [event('c', 'com.example.z')])])).toEqual({ written: 0 });
    expect(lines).toContainEqual(expect.objectContaining({ severity: 'WARNING', account: 'default', error: 'deadline exceeded' }));
  });

  it('keeps each catalogue document far below 1 MiB: full samples first, then 1 KB ones, then types are left out (with one warning)', async () => {
    const { lines, log } = logged();
    const store = new MemoryEventTypeStore();
    const catalogue = new EventTypeCatalogue(store, log);
    const big = { blob: 'x'.repeat(20_000) };
    // 8,000 types with 20 KB events, in rounds of 500.
    for (let r = 0; r < 16; r++) await catalogue.observe([batch(at(r), Array.from({ length: 500 }, (_, i) => event(`e${r}-${i}`, `com.example.big.${r * 500 + i}`, big)))]);
    for (const [id, doc] of store.docs) {
      const bytes = [...doc.values()].reduce((n, e) => n + Buffer.byteLength(JSON.stringify(e)), 0);
      expect([id, bytes <= SHARD_MAX_BYTES]).toEqual([id, true]);
    }
    const samples = (await store.list('default')).map((s) => Buffer.byteLength(JSON.stringify(s.sample)));
    expect(samples.filter((b) => b > SMALL_SAMPLE_BYTES).length).toBeGreaterThan(8 * 20);
    expect(samples.every((b) => b <= SAMPLE_MAX_BYTES)).toBe(true);
    expect(samples.length).toBeGreaterThan(3000);
    expect(samples.length).toBeLessThan(8000);
    expect(lines.filter((l) => /more event types than its catalogue holds/.test(String(l.message)))).toHaveLength(1);
  });
});

describe('sampleOf', () => {
  it('cuts a sample over 8 KB: the attributes whole, the data as an excerpt, marked truncated', () => {
    const small = sampleOf(event('s', 'com.example.x', { hello: 'world' }));
    expect(small).toEqual({ specversion: '1.0', id: 's', source: '/shop', type: 'com.example.x', datacontenttype: 'application/json', data: { hello: 'world' } });
    const big = sampleOf(event('b', 'com.example.x', { blob: 'é'.repeat(20_000) }));
    expect(big).toMatchObject({ id: 'b', type: 'com.example.x', truncated: true, dataExcerpt: expect.stringMatching(/^\{"blob":"éé/) as unknown });
    expect(big.data).toBeUndefined();
    expect(Buffer.byteLength(JSON.stringify(big))).toBeLessThanOrEqual(SAMPLE_MAX_BYTES);
    const binary = sampleOf({ attributes: { specversion: '1.0', id: 'bin', source: '/s', type: 't', datacontenttype: 'application/octet-stream' }, data: Buffer.alloc(20_000, 7) });
    expect(binary).toMatchObject({ id: 'bin', truncated: true });
    expect(Buffer.byteLength(JSON.stringify(binary))).toBeLessThanOrEqual(SAMPLE_MAX_BYTES);
  });

  it('keeps binary-mode JSON data that spells a lone surrogate as its bytes (no Firestore string can hold it decoded)', () => {
    const data = Buffer.from('{"name":"\\ud800"}');
    const sample = sampleOf({ attributes: { specversion: '1.0', id: 'ls', source: '/s', type: 't', datacontenttype: 'application/json' }, data });
    expect(sample).toEqual({ specversion: '1.0', id: 'ls', source: '/s', type: 't', datacontenttype: 'application/json', data_base64: data.toString('base64') });
    expect(sampleOf({ attributes: { specversion: '1.0', id: 'ok', source: '/s', type: 't', datacontenttype: 'application/json' }, data: Buffer.from('{"e":"\\ud83d\\ude00"}') })).toMatchObject({ data: { e: '😀' } });
  });

});

describe('ingest and the reconciler', () => {
  const base = () => ({
    bus: { publish: async () => '1' },
    lanes: { ensureLane: async () => undefined, removeLane: async () => undefined },
    names: { prefix: 'herald' },
    directory: new DestinationDirectory(new MemoryDestinationStore(), systemClock, 0),
    clock: systemClock,
    log: logged().log,
    maxBodyBytes: 100_000,
    maxEventBytes: 10_000,
  });

  it('ingest writes no sample; the reconciler fills the catalogue from the journal batches it reconciles', async () => {
    const intake = new MemoryIntakeStore();
    const store = new MemoryEventTypeStore();
    const body = (id: string, type: string) => Buffer.from(JSON.stringify({ specversion: '1.0', id, source: '/shop', type, data: { id } }));
    const headers = { 'content-type': 'application/cloudevents+json' };
    const deps = { ...base(), journal: new IntakeJournal(intake, systemClock) };
    for (const [id, type] of [['e1', 'com.example.a'], ['e2', 'com.example.b'], ['e3', 'com.example.a']] as const) expect(await ingest(deps, headers, body(id, type))).toMatchObject({ kind: 'accepted' });
    expect(store.writes).toBe(0);
    const { log, lines } = logged();
    const round = () =>
      reconcileOnce({
        intake,
        deliveries: new MemoryDeliveryStore(),
        directory: deps.directory,
        bus: { publish: async () => '1' },
        deadLetterTopic: 'herald-dead-letter',
        clock: { now: () => new Date(Date.now() + 60_000) },
        log,
        graceMs: 60_000,
        batchLimit: 100,
        rateLeases: { lease: () => Promise.reject(new Error('not used')), peek: async () => undefined },
        state: {},
        catalogue: new EventTypeCatalogue(store, log),
      });
    expect(await round()).toMatchObject({ batches: expect.any(Number) as unknown });
    expect((await store.list('default')).map((s) => [s.type, s.sample.id])).toEqual([
      ['com.example.a', 'e3'],
      ['com.example.b', 'e2'],
    ]);
    expect(await intake.due(new Date(Date.now() + 120_000), 100)).toEqual([]);
    expect(lines.filter((l) => l.severity === 'WARNING')).toEqual([]);
  });

  it('a catalogue that fails never fails nor holds back the round: its batches are reconciled and removed', async () => {
    const intake = new MemoryIntakeStore();
    await intake.add(batch(new Date(Date.now() - 120_000).toISOString(), [event('x', 'com.example.x')]));
    const { log, lines } = logged();
    const report = await reconcileOnce({
      intake,
      deliveries: new MemoryDeliveryStore(),
      directory: base().directory,
      bus: { publish: async () => '1' },
      deadLetterTopic: 'herald-dead-letter',
      clock: systemClock,
      log,
      graceMs: 60_000,
      batchLimit: 100,
      rateLeases: { lease: () => Promise.reject(new Error('not used')), peek: async () => undefined },
      state: {},
      catalogue: new EventTypeCatalogue({ known: () => Promise.reject(new Error('firestore down')), record: () => Promise.reject(new Error('firestore down')) }, log),
    });
    expect(report.batches).toBe(1);
    expect(await intake.due(new Date(), 100)).toEqual([]);
    expect(lines).toContainEqual(expect.objectContaining({ severity: 'WARNING', error: 'firestore down' }));
  });
});
