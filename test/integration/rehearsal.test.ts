import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { Webhook } from 'standardwebhooks';
import { z } from 'zod';
import { eventually } from '../support/eventually';
import { LocalHerald, spawnLocalHerald } from '../support/local-herald';
import { Receiver } from '../support/receiver';

/**
 * Issue 54, small: `npm run rehearse` — each built function a process of its own, started by
 * the functions framework's CLI, behind the rehearsal's proxy — carries events to a signed
 * webhook, and loses none when a deliver process is SIGKILLed mid-run (the supervisor starts
 * another, as Cloud Run would; the push it cut off comes again). It stops on SIGTERM within
 * Cloud Run's 10 s. The full paths (retry, suspension, replay, console): `npm run rehearse -- --check`.
 */
const ROOT = path.resolve(__dirname, '../..');
const RUN = Date.now().toString(36);
const ADMIN = `herald_admin_rehearsal_${RUN}_0123456789`;
const INGEST = `herald_ingest_rehearsal_${RUN}_0123456789`;
const EVENTS = 40;

/** dist/ is newer than every source it is built from: the test may skip the 20 s build (`npm test` on a clean clone builds). */
function distIsFresh(): boolean {
  let built: number;
  try {
    built = statSync(path.join(ROOT, 'dist', 'functions', 'index.js')).mtimeMs;
    statSync(path.join(ROOT, 'dist', 'console', 'index.html'));
  } catch {
    return false;
  }
  const newest = (dir: string): number =>
    Math.max(0, ...readdirSync(dir, { withFileTypes: true }).map((e) => (e.isDirectory() ? newest(path.join(dir, e.name)) : statSync(path.join(dir, e.name)).mtimeMs)));
  return ['functions', 'shared', 'console/src'].every((d) => newest(path.join(ROOT, d)) < built);
}

const processesSchema = z.object({ processes: z.array(z.object({ function: z.string(), index: z.number(), pid: z.number().optional(), live: z.boolean(), restarts: z.number() })) });

let herald: LocalHerald;
let url: string;
// Answers after a moment, so that a kill lands while deliveries are under way.
const receiver = new Receiver(() => ({ status: 204, delayMs: 150 }));

beforeAll(async () => {
  await receiver.start();
  herald = spawnLocalHerald(
    {
      ...process.env,
      PORT: '0',
      HERALD_PROJECT_ID: `rehearsal-${RUN}`,
      HERALD_ADMIN_TOKEN: ADMIN,
      HERALD_INGEST_TOKEN: INGEST,
      HERALD_TIME_SCALE: '60',
      // A destination registered through admin reaches the ingest and deliver processes within this (10 s by default, as on GCP).
      HERALD_DESTINATION_CACHE_MS: '500',
    },
    { detached: true, entry: 'apps/rehearsal/main.ts', args: distIsFresh() ? ['--no-build'] : [] },
  );
  url = await herald.ready(150_000);
}, 180_000);

afterAll(async () => {
  if (herald && herald.child.exitCode === null && herald.child.pid) process.kill(-herald.child.pid, 'SIGKILL');
  await receiver.stop();
});

const admin = (method: string, route: string, body?: unknown) =>
  fetch(`${url}/admin${route}`, { method, headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });

const publish = async (i: number) => {
  const res = await fetch(`${url}/ingest`, {
    method: 'POST',
    headers: { authorization: `Bearer ${INGEST}`, 'ce-specversion': '1.0', 'ce-id': `e-${i}`, 'ce-source': '/rehearsal-test', 'ce-type': 'rehearsal.test', 'content-type': 'application/json' },
    body: JSON.stringify({ i }),
  });
  expect(res.status).toBe(202);
};

const processes = async () => processesSchema.parse(await (await fetch(`${url}/rehearsal/processes`, { headers: { authorization: `Bearer ${ADMIN}` } })).json()).processes;

test('separate function processes deliver every event, a deliver process SIGKILLed mid-run included, replace an ingest process as a rollout does, and stop on SIGTERM within 10 s', async () => {
  expect((await fetch(`${url}/healthz`)).status).toBe(200);
  const listed = await processes();
  expect(listed.filter((p) => p.function === 'deliver')).toHaveLength(2);
  expect(listed.filter((p) => p.function === 'ingest')).toHaveLength(2);
  expect(new Set(listed.map((p) => p.pid)).size).toBe(listed.length);

  const put = await admin('PUT', '/destinations/hook', { url: `${receiver.url}/hook`, eventTypes: ['rehearsal.*'] });
  expect(put.status).toBe(201);
  const { secret } = z.object({ secret: z.string() }).parse(await put.json());
  await new Promise((r) => setTimeout(r, 1_500));

  for (let i = 0; i < EVENTS / 2; i++) await publish(i);
  const first = await eventually('a first delivery', () => receiver.on('/hook')[0], 30_000);
  // The spine's end: a webhook signed as Standard Webhooks says, with the secret PUT returned.
  expect(() => new Webhook(secret).verify(first.body.toString(), first.headers as Record<string, string>)).not.toThrow();
  const victim = listed.find((p) => p.function === 'deliver' && p.index === 0)!;
  process.kill(victim.pid!, 'SIGKILL');
  for (let i = EVENTS / 2; i < EVENTS; i++) await publish(i);

  await eventually(
    `all ${EVENTS} events delivered`,
    () => {
      const ids = new Set(receiver.on('/hook').map((r) => r.headers['ce-id']));
      return ids.size === EVENTS ? true : undefined;
    },
    60_000,
  );
  expect(herald.output()).toContain(`deliver#0 (pid ${victim.pid}) exited (SIGKILL); starting it again`);
  // Cloud Run's part: the killed instance is replaced.
  await eventually('the killed deliver process started again', async () => ((await processes()).find((p) => p.function === 'deliver' && p.index === 0 && p.live && p.restarts === 1) ? true : undefined), 30_000);

  // A rollout's part: ingest#0 is replaced while events keep coming, and each is answered 202.
  const old = (await processes()).find((p) => p.function === 'ingest' && p.index === 0)!;
  let rolling = true;
  const during = (async () => {
    for (let i = 1_000; rolling; i++) await publish(i);
  })();
  const restart = await fetch(`${url}/rehearsal/processes/ingest/0/restart`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}` } });
  rolling = false;
  await during;
  expect(restart.status).toBe(200);
  const ingest = (await processes()).filter((p) => p.function === 'ingest');
  expect(ingest.map((p) => [p.index, p.live])).toEqual([
    [0, true],
    [1, true],
  ]);
  expect(ingest[0]!.pid).not.toBe(old.pid);
  // Retired, not crashed: the supervisor does not start it again.
  expect(herald.output()).not.toContain(`ingest#0 (pid ${old.pid}) exited`);

  const began = Date.now();
  process.kill(-herald.child.pid!, 'SIGTERM');
  const { code } = await herald.exited;
  expect(code).toBe(0);
  expect(Date.now() - began).toBeLessThan(10_000);
}, 150_000);
