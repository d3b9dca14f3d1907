import { EventTypeSampler, SAMPLE_MAX_BYTES, sampleOf } from '../../shared/app/event-type-samples';
import { ingest } from '../../shared/app/ingest';
import { IntakeJournal } from '../../shared/app/intake-journal';
import { DestinationDirectory } from '../../shared/app/destination-directory';
import { MemoryEventTypeStore } from '../../shared/adapters/memory/event-type-store';
import { MemoryIntakeStore } from '../../shared/adapters/memory/intake-store';
import { HeraldEvent } from '../../shared/domain/event';
import { createLogger } from '../../shared/log';
import { systemClock } from '../../shared/ports';
import { MemoryDestinationStore } from '../support/memory-destination-store';

/** A clock the test moves. */
function clockAt(ms: number) {
  const clock = { t: ms, now: () => new Date(clock.t) };
  return clock;
}

function event(id: string, type: string, data: unknown = { id }, account?: string): HeraldEvent {
  return { attributes: { specversion: '1.0', id, source: '/shop', type, datacontenttype: 'application/json', ...(account ? { heraldaccount: account } : {}) }, data: Buffer.from(JSON.stringify(data)) };
}

function logged() {
  const lines: Record<string, unknown>[] = [];
  return { lines, log: createLogger({ level: 'DEBUG', write: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) }) };
}

describe('EventTypeSampler', () => {
  it('writes each (account, type) at most once a minute per instance, the latest event of it, and again after the minute', async () => {
    const store = new MemoryEventTypeStore();
    const clock = clockAt(Date.parse('2026-11-26T10:00:00Z'));
    const sampler = new EventTypeSampler(store, clock, logged().log);
    for (let i = 0; i < 1000; i++) {
      clock.t += 50; // 20 events a second for 50 s, of two types in two accounts
      sampler.observe([event(`o${i}`, 'com.example.order.created', { id: `o${i}` }, 'acme'), event(`g${i}`, 'com.example.order.created', { id: `g${i}` }, 'globex'), event(`p${i}`, 'com.example.invoice.paid', undefined, 'acme')]);
    }
    await sampler.settled();
    expect(store.puts).toBe(3);
    expect((await store.list('acme')).map((s) => [s.type, s.sample.id, s.lastSeenAt])).toEqual([
      ['com.example.invoice.paid', 'p0', '2026-11-26T10:00:00.050Z'],
      ['com.example.order.created', 'o0', '2026-11-26T10:00:00.050Z'],
    ]);
    expect((await store.list('globex')).map((s) => s.sample)).toEqual([expect.objectContaining({ id: 'g0', heraldaccount: 'globex', data: { id: 'g0' } })]);
    clock.t += 10_050; // a minute after the first write
    sampler.observe([event('late-1', 'com.example.order.created', undefined, 'acme'), event('late-2', 'com.example.order.created', undefined, 'acme')]);
    await sampler.settled();
    expect(store.puts).toBe(4);
    expect((await store.list('acme')).find((s) => s.type === 'com.example.order.created')!.sample.id).toBe('late-2');
  });

  it('a failed write is swallowed and logged as a warning; the type is tried again after the minute', async () => {
    const { lines, log } = logged();
    const clock = clockAt(0);
    let fail = true;
    const store = new MemoryEventTypeStore();
    const flaky = { put: (s: Parameters<MemoryEventTypeStore['put']>[0]) => (fail ? Promise.reject(new Error('14 UNAVAILABLE: firestore down')) : store.put(s)) };
    const sampler = new EventTypeSampler(flaky, clock, log);
    expect(() => sampler.observe([event('a', 'com.example.x')])).not.toThrow();
    await sampler.settled();
    expect(lines).toContainEqual(expect.objectContaining({ severity: 'WARNING', eventType: 'com.example.x', account: 'default', error: expect.stringMatching(/UNAVAILABLE/) as unknown }));
    fail = false;
    sampler.observe([event('b', 'com.example.x')]);
    await sampler.settled();
    expect(store.puts).toBe(0);
    clock.t += 60_000;
    sampler.observe([event('c', 'com.example.x')]);
    await sampler.settled();
    expect((await store.list('default')).map((s) => s.sample.id)).toEqual(['c']);
  });

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

  it('ingest neither waits for a sample nor fails by one', async () => {
    const { lines, log } = logged();
    const never = { put: () => new Promise<void>(() => undefined) };
    const body = Buffer.from(JSON.stringify({ specversion: '1.0', id: 'e1', source: '/shop', type: 'com.example.order.created', data: {} }));
    const base = {
      bus: { publish: async () => '1' },
      lanes: { ensureLane: async () => undefined, removeLane: async () => undefined },
      names: { prefix: 'herald' },
      directory: new DestinationDirectory(new MemoryDestinationStore(), systemClock, 0),
      journal: new IntakeJournal(new MemoryIntakeStore(), systemClock),
      clock: systemClock,
      log,
      maxBodyBytes: 100_000,
      maxEventBytes: 10_000,
    };
    const headers = { 'content-type': 'application/cloudevents+json' };
    expect(await ingest({ ...base, samples: new EventTypeSampler(never, systemClock, log) }, headers, body)).toEqual({ status: 202, body: { accepted: ['e1'] } });
    const broken = { observe: () => { throw new Error('sampler bug'); } };
    expect(await ingest({ ...base, samples: broken }, headers, body)).toEqual({ status: 202, body: { accepted: ['e1'] } });
    expect(lines).toContainEqual(expect.objectContaining({ severity: 'WARNING', error: 'sampler bug' }));
  });
});
