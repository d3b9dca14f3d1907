import { queuedReport, ReplayReport } from '../../shared/domain/replay/replay';
import { ReplayStore } from '../../shared/ports/replay';
import { contractSuite } from './contract-suite';

const T0 = Date.parse('2026-11-25T12:00:00.000Z');
const iso = (seconds: number) => new Date(T0 + seconds * 1000).toISOString();

function report(id: string, createdSecond: number, extra: Partial<ReplayReport> = {}): ReplayReport {
  return { ...queuedReport(id, {}, new Date(iso(createdSecond))), ...extra };
}

/** ReplayStore's contract (shared/ports/replay.ts), every implementation: Firestore's on the emulator, memory's in unit tests. */
export function replayStoreConformance(name: string, make: () => Promise<ReplayStore> | ReplayStore): void {
  contractSuite(`${name} replay store`, make, (store) => {
    test('create writes a report only if none has its id: a second is false and changes nothing', async () => {
      expect(await store.create(report('r-1', 1))).toBe(true);
      expect(await store.create(report('r-1', 2, { dryRun: true }))).toBe(false);
      expect(await store.get('r-1')).toEqual(report('r-1', 1));
      expect(await store.get('r-none')).toBeUndefined();
    });

    test('update: decide sees the current report (undefined when absent); what it returns is written; undefined writes nothing', async () => {
      await store.create(report('r-1', 1));
      const running = await store.update('r-1', (current) => current && { ...current, status: 'running', runs: current.runs + 1 });
      expect(running).toEqual({ ...report('r-1', 1), status: 'running', runs: 1 });
      expect(await store.get('r-1')).toEqual(running);
      expect(await store.update('r-1', () => undefined)).toBeUndefined();
      expect(await store.get('r-1')).toEqual(running);
      const seen: (ReplayReport | undefined)[] = [];
      expect(await store.update('r-none', (current) => (seen.push(current), undefined))).toBeUndefined();
      expect(seen).toEqual([undefined]);
      expect(await store.get('r-none')).toBeUndefined();
    });

    test("recent: newest first, at most `limit`; with an account, only the replays scoped to it", async () => {
      await store.create(report('r-old', 1, { request: { account: 'acme' } }));
      await store.create(report('r-mid', 2));
      await store.create(report('r-new', 3, { request: { account: 'acme' } }));
      await store.create(report('r-other', 4, { request: { account: 'acme-2' } }));
      expect((await store.recent(10)).map((r) => r.id)).toEqual(['r-other', 'r-new', 'r-mid', 'r-old']);
      expect((await store.recent(2)).map((r) => r.id)).toEqual(['r-other', 'r-new']);
      expect((await store.recent(10, 'acme')).map((r) => r.id)).toEqual(['r-new', 'r-old']);
      expect((await store.recent(1, 'acme')).map((r) => r.id)).toEqual(['r-new']);
      expect(await store.recent(10, 'nobody')).toEqual([]);
    });

    test('running: the reports whose status is running, oldest first, at most `limit`', async () => {
      await store.create(report('r-3', 3, { status: 'running' }));
      await store.create(report('r-1', 1, { status: 'running' }));
      await store.create(report('r-2', 2, { status: 'done' }));
      await store.create(report('r-4', 4, { status: 'running' }));
      expect((await store.running(10)).map((r) => r.id)).toEqual(['r-1', 'r-3', 'r-4']);
      expect((await store.running(1)).map((r) => r.id)).toEqual(['r-1']);
    });

    test('queued: the queued reports created at or after `since`, oldest first; an account\'s report is kept under <account>:<id>', async () => {
      await store.create(report('q-1', 1));
      await store.create(report('q-2', 2, { request: { account: 'acme' } }));
      await store.create(report('q-3', 3, { status: 'running' }));
      await store.create(report('q-2', 4, { request: { account: 'globex' } }));
      expect((await store.queued(iso(0), 10)).map((r) => [r.id, r.request.account])).toEqual([['q-1', undefined], ['q-2', 'acme'], ['q-2', 'globex']]);
      expect((await store.queued(iso(2), 10)).map((r) => r.request.account)).toEqual(['acme', 'globex']);
      expect((await store.queued(iso(0), 1)).map((r) => r.id)).toEqual(['q-1']);
      expect(await store.get('acme:q-2')).toEqual(report('q-2', 2, { request: { account: 'acme' } }));
      expect(await store.get('q-2')).toBeUndefined();
      expect((await store.named('q-2', 10)).map((r) => r.request.account).sort()).toEqual(['acme', 'globex']);
      expect(await store.named('q-none', 10)).toEqual([]);
    });

    test('the runner: taken by one replay at a time until its lease ends; freed only by its holder', async () => {
      const now = new Date(T0);
      const until = new Date(T0 + 60_000);
      expect(await store.takeRunner('r-1', until, now)).toEqual({ ok: true });
      // Its own again: still its (a redelivered trigger of the same replay).
      expect(await store.takeRunner('r-1', until, now)).toEqual({ ok: true });
      expect(await store.takeRunner('r-2', until, now)).toEqual({ ok: false, held: { holder: 'r-1', until: until.toISOString() } });
      await store.releaseRunner('r-2');
      expect(await store.takeRunner('r-2', until, now)).toEqual({ ok: false, held: { holder: 'r-1', until: until.toISOString() } });
      // Past the holder's lease, another takes it.
      expect(await store.takeRunner('r-2', new Date(T0 + 120_000), new Date(T0 + 61_000))).toEqual({ ok: true });
      await store.releaseRunner('r-2');
      expect(await store.takeRunner('r-3', until, now)).toEqual({ ok: true });
    });
  });
}
