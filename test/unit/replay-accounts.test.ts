import { MemoryDeadLetterQueue } from '../../shared/adapters/memory/dead-letter-queue';
import { MemoryDeliveryStore } from '../../shared/adapters/memory/delivery-store';
import { MemoryDestinationStore } from '../../shared/adapters/memory/destination-store';
import { MemoryReplayStore } from '../../shared/adapters/memory/replay-store';
import { getReplay, postReplay, ReplaysAdminDeps } from '../../shared/app/admin/replays-admin';
import { ReplayDeps, ReplayTrigger, runReplay } from '../../shared/app/retry/replay-run';
import { queuedReport, ReplayRequest } from '../../shared/domain/replay/replay';
import { createLogger } from '../../shared/log';

/**
 * Issue 50: one replay lock was shared by every account (one tenant's replay answered 409 to
 * all the others) and replay ids were global (an id another account had chosen was refused,
 * and showed nothing of its own). Now ids are the account's own, and an account's replay never
 * refuses another's: they take turns at the dead-letter topic, first come first served.
 */

let t = Date.parse('2026-11-23T15:00:00.000Z');
const clock = { now: () => new Date(t) };

function world() {
  const replays = new MemoryReplayStore();
  const published: { data: ReplayRequest & { id: string } }[] = [];
  const log = createLogger({ level: 'ERROR', write: () => undefined });
  const admin: ReplaysAdminDeps = {
    replays,
    bus: { publish: async (_topic, m) => String(published.push({ data: JSON.parse(m.data.toString()) as ReplayRequest & { id: string } })) },
    replayTopic: 'herald-replay',
    clock,
    log,
  };
  const requeued: ReplayTrigger[] = [];
  const run: ReplayDeps = {
    replays,
    deadLetters: new MemoryDeadLetterQueue(() => t),
    deliveries: new MemoryDeliveryStore(),
    destinations: new MemoryDestinationStore(),
    clock,
    log,
    runMs: 60_000,
    leaseMs: 600_000,
    pullBatch: 10,
    progressEveryMs: 0,
    waitMs: 10_000,
    pollMs: 1_000,
    sleep: async (ms) => void (t += ms),
    requeue: async (trigger) => void requeued.push(trigger),
  };
  /** The trigger POST /admin/replays published for replay `id`. */
  const trigger = (id: string, account?: string): ReplayTrigger => {
    const sent = published.find((p) => p.data.id === id && p.data.account === account)!;
    const { id: _id, ...request } = sent.data;
    return { id, request: { ...request, id }, messageId: `m-${id}-${account ?? 'operator'}` };
  };
  return { replays, admin, run, requeued, trigger };
}

beforeEach(() => {
  t = Date.parse('2026-11-23T15:00:00.000Z');
});

test("an account's replay running does not refuse another account's: that one is queued and runs when its turn comes", async () => {
  const { admin, run, trigger, requeued, replays } = world();
  expect((await postReplay(admin, { id: 'a1' }, 'acme')).kind).toBe('accepted');
  // acme's takes the runner and holds it (its run is under way).
  await replays.takeRunner('acme:a1', new Date(t + 600_000), new Date(t), 'acme');
  await replays.update('acme:a1', (r) => r && { ...r, status: 'running', startedAt: new Date(t).toISOString(), runningUntil: new Date(t + 600_000).toISOString() });
  const globex = await postReplay(admin, { id: 'g1' }, 'globex');
  expect(globex).toMatchObject({ kind: 'accepted', body: { id: 'g1', status: 'queued', report: '/admin/accounts/globex/replays/g1' } });
  // A second replay of acme's own is refused while its first runs.
  expect(await postReplay(admin, {}, 'acme')).toMatchObject({ kind: 'conflict', body: { error: expect.stringMatching(/^replay a1 is running .*an account runs one replay at a time/) } });

  // globex's trigger waits (here, then published again), never refused; its report stays queued.
  const waited = await runReplay(run, trigger('g1', 'globex'));
  expect(waited).toMatchObject({ kind: 'waiting', requeued: true, report: { id: 'g1', status: 'queued' } });
  expect(requeued.map((r) => r.id)).toEqual(['g1']);
  // acme's run ends; globex's turn comes.
  await replays.releaseRunner('acme:a1');
  await replays.update('acme:a1', (r) => r && { ...r, status: 'done' });
  expect(await runReplay(run, trigger('g1', 'globex'))).toMatchObject({ kind: 'ran', report: { id: 'g1', status: 'done', request: { account: 'globex' } } });
});

test('a trigger waiting here runs as soon as the runner is freed within its wait', async () => {
  const { admin, run, trigger, requeued, replays } = world();
  await postReplay(admin, { id: 'g1' }, 'globex');
  await replays.takeRunner('acme:a1', new Date(t + 3_000), new Date(t), 'acme');
  expect(await runReplay(run, trigger('g1', 'globex'))).toMatchObject({ kind: 'ran', report: { status: 'done' } });
  expect(requeued).toEqual([]);
});

test('first come, first served: a replay queued earlier goes before a later one, even with the runner free', async () => {
  const { admin, run, trigger, replays } = world();
  await postReplay(admin, { id: 'g1' }, 'globex');
  t += 1_000;
  await postReplay(admin, { id: 'a2' }, 'acme');
  expect(await runReplay({ ...run, waitMs: 0 }, trigger('a2', 'acme'))).toMatchObject({ kind: 'waiting', report: { id: 'a2', status: 'queued' } });
  expect(await runReplay(run, trigger('g1', 'globex'))).toMatchObject({ kind: 'ran' });
  expect(await runReplay(run, trigger('a2', 'acme'))).toMatchObject({ kind: 'ran' });
  expect((await replays.get('acme:a2'))?.status).toBe('done');
});

test("an id is the account's own: another account may choose it too, and sees only its own replay under it", async () => {
  const { admin } = world();
  expect((await postReplay(admin, { id: 'nightly', destination: 'orders' }, 'acme')).kind).toBe('accepted');
  t += 1_000;
  expect(await postReplay(admin, { id: 'nightly', destination: 'billing' }, 'globex')).toMatchObject({ kind: 'accepted', body: { id: 'nightly' } });
  expect(await getReplay(admin, 'nightly', 'acme')).toMatchObject({ kind: 'ok', body: { id: 'nightly', request: { account: 'acme', destination: 'orders' } } });
  expect(await getReplay(admin, 'nightly', 'globex')).toMatchObject({ kind: 'ok', body: { id: 'nightly', request: { account: 'globex', destination: 'billing' } } });
  expect(await getReplay(admin, 'nightly', 'initech')).toMatchObject({ kind: 'not-found' });
  // The account's own id again: taken.
  expect(await postReplay(admin, { id: 'nightly' }, 'acme')).toMatchObject({ kind: 'conflict', body: { issues: [{ path: 'id', message: 'already used' }] } });
  // The operator asks by account when two accounts share an id, and finds an account's replay by its id alone otherwise.
  expect(await getReplay(admin, 'nightly')).toMatchObject({ kind: 'conflict', body: { error: expect.stringMatching(/GET \/admin\/accounts\/acme\/replays\/nightly.*GET \/admin\/accounts\/globex\/replays\/nightly/) } });
});

test("the operator's replays across accounts keep working, beside an account's", async () => {
  const { admin, run, trigger, replays } = world();
  await postReplay(admin, { id: 'a1' }, 'acme');
  expect(await postReplay(admin, { id: 'everything' })).toMatchObject({ kind: 'accepted', body: { report: '/admin/replays/everything' } });
  expect(await getReplay(admin, 'a1')).toMatchObject({ kind: 'ok', body: { id: 'a1', request: { account: 'acme' } } });
  expect(await runReplay(run, trigger('a1', 'acme'))).toMatchObject({ kind: 'ran' });
  expect(await runReplay(run, trigger('everything'))).toMatchObject({ kind: 'ran', report: { id: 'everything', status: 'done' } });
  expect((await replays.get('everything'))?.status).toBe('done');
});

test('a report kept under its bare id, from before ids were per account, is still its account’s to read, and its id still taken', async () => {
  const { admin, run, replays } = world();
  // Written where every report was kept before: under its id alone.
  await replays.update('old-one', () => queuedReport('old-one', { account: 'acme' }, new Date(t - 60_000)));
  expect(await getReplay(admin, 'old-one', 'acme')).toMatchObject({ kind: 'ok', body: { id: 'old-one', request: { account: 'acme' } } });
  expect(await getReplay(admin, 'old-one', 'globex')).toMatchObject({ kind: 'not-found' });
  expect(await postReplay(admin, { id: 'old-one' }, 'acme')).toMatchObject({ kind: 'conflict', body: { issues: [{ path: 'id' }] } });
  expect((await postReplay(admin, { id: 'old-one' }, 'globex')).kind).toBe('accepted');
  // Its trigger, delivered again, runs it where it is.
  expect(await runReplay(run, { id: 'old-one', request: { account: 'acme', id: 'old-one' }, messageId: 'm-old' })).toMatchObject({ kind: 'ran' });
  expect((await replays.get('old-one'))?.status).toBe('done');
  expect(await replays.get('acme:old-one')).toBeUndefined();
});
