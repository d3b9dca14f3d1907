import { ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { PubSub } from '@google-cloud/pubsub';
import { generateSecretsKey } from '../../shared/domain/access/secret-box';
import { freePort } from '../../apps/local/emulators';
import { groupAlive } from '../../apps/local/emulator-processes';
import { eventually } from '../support/eventually';
import { Receiver } from '../support/receiver';
import { LocalHerald, spawnLocalHerald } from '../support/local-herald';

/**
 * Local mode stopped under load, as a user does it: `npm start` in its own process group, a
 * slow receiver so deliveries are under way, 16 publishers sending, then SIGTERM or Ctrl-C
 * (SIGINT) to the whole group. Herald must drain before it stops the emulators it started,
 * exit 0 within 10 s, leave the emulators it reused running, and lose nothing it accepted.
 */

const SLOW_REPLY_MS = 300;
const PUBLISHERS = 16;
const ADMIN_TOKEN = 'herald_admin_local-stop-test-token';
const INGEST_TOKEN = 'herald_ingest_local-stop-test-token';
const SECRETS_KEY = generateSecretsKey();

const receiver = new Receiver(() => ({ status: 204, delayMs: SLOW_REPLY_MS }));
const running = new Set<Herald>();
const loads = new Set<{ stop(): Promise<string[]> }>();

beforeAll(async () => {
  await receiver.start();
});
afterAll(async () => {
  // A test that failed leaves nothing behind: its Herald and the emulators it started go too.
  for (const herald of running) herald.kill();
  await Promise.all([...loads].map((load) => load.stop()));
  await receiver.stop();
});

/** The ce-ids the receiver has seen. */
const received = (): Set<string> => new Set(receiver.requests.map((r) => String(r.headers['ce-id'])));

/** Emulators shared by the test run: a Herald reusing them must leave them running. */
const sharedEmulators = (): { pubsub: string; firestore: string } => ({ pubsub: process.env.PUBSUB_EMULATOR_HOST!, firestore: process.env.FIRESTORE_EMULATOR_HOST! });

/** `npm start` (`node --import tsx apps/local/main.ts`) as a process group of its own. */
class Herald {
  readonly child: ChildProcess;
  url = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>;
  private readonly process: LocalHerald;

  constructor(env: NodeJS.ProcessEnv) {
    this.process = spawnLocalHerald(env, { detached: true });
    this.child = this.process.child;
    running.add(this);
    this.exited = this.process.exited.then(({ code, signal }) => {
      running.delete(this);
      return { code, signal, at: Date.now() };
    });
  }

  get output(): string {
    return this.process.output();
  }

  static async start(env: NodeJS.ProcessEnv): Promise<Herald> {
    const herald = new Herald(env);
    herald.url = await herald.process.ready();
    return herald;
  }

  /** To the whole process group, as a terminal's Ctrl-C or `kill -- -PGID` does. */
  signal(signal: NodeJS.Signals): number {
    signalGroup(this.child.pid!, signal);
    return Date.now();
  }

  /** How it ended, or 'still running' after `ms` (the old code hung for minutes). */
  async exitWithin(ms: number): Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number } | 'still running'> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'still running'>((r) => (timer = setTimeout(() => r('still running'), ms)));
    const ended = await Promise.race([this.exited, late]);
    clearTimeout(timer);
    return ended;
  }

  kill(): void {
    try {
      process.kill(-this.child.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
    for (const pgid of emulatorGroups(this.output)) signalGroup(pgid, 'SIGKILL');
  }

  /** What the admin API answers to a GET, as text (for a failure's diagnosis). */
  async read(route: string): Promise<string> {
    const response = await fetch(`${this.url}/admin${route}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    return `${response.status} ${await response.text()}`;
  }

  async admin(method: string, route: string, body?: unknown): Promise<number> {
    const response = await fetch(`${this.url}/admin${route}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    await response.text();
    return response.status;
  }
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // already gone
  }
}

/** Process groups of the emulators a Herald started, found by the ports it printed. */
function emulatorGroups(output: string): number[] {
  const ports = [...output.matchAll(/starting the (?:Pub\/Sub|Firestore) emulator on 127\.0\.0\.1:(\d+)/g)].map((m) => m[1]!);
  const groups = new Set<number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (!ports.some((port) => cmdline.includes(`127.0.0.1:${port}`))) continue;
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      groups.add(Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]));
    } catch {
      // exited while we looked
    }
  }
  return [...groups];
}

/** The shared emulators hold other tests' projects too: clear only this one's data. */
async function clearProject(project: string): Promise<void> {
  const pubsub = new PubSub({ projectId: project });
  const [subscriptions] = await pubsub.getSubscriptions();
  await Promise.all(subscriptions.map((s) => s.delete().catch(() => undefined)));
  const [topics] = await pubsub.getTopics();
  await Promise.all(topics.map((t) => t.delete().catch(() => undefined)));
  await pubsub.close();
  const response = await fetch(`http://${sharedEmulators().firestore}/emulator/v1/projects/${project}/databases/(default)/documents`, { method: 'DELETE' });
  expect(response.status).toBe(200);
}

async function answers(host: string): Promise<boolean> {
  return fetch(`http://${host}/`, { signal: AbortSignal.timeout(2000) }).then((r) => r.ok, () => false);
}

/**
 * PUBLISHERS producers sending one event after another to /ingest until `stop`, as a producer
 * would: a refused or failed request is tried again later (not counted). Resolves the ce-ids
 * that got 202 — what Herald accepted and must not lose.
 */
function publish(url: string, prefix: string): { accepted: string[]; stop(): Promise<string[]> } {
  const accepted: string[] = [];
  let stopped = false;
  let n = 0;
  const one = async (): Promise<void> => {
    while (!stopped) {
      const id = `${prefix}-${n++}`;
      const status = await fetch(`${url}/ingest`, {
        method: 'POST',
        headers: { authorization: `Bearer ${INGEST_TOKEN}`, 'ce-specversion': '1.0', 'ce-id': id, 'ce-source': '/local-stop', 'ce-type': 'com.example.stop', 'content-type': 'application/json' },
        body: JSON.stringify({ id }),
        signal: AbortSignal.timeout(15_000),
      }).then(
        async (r) => (await r.text(), r.status),
        () => 0,
      );
      if (status === 202) accepted.push(id);
      else await new Promise((r) => setTimeout(r, 50));
    }
  };
  const loops = Array.from({ length: PUBLISHERS }, one);
  const load = {
    accepted,
    async stop() {
      stopped = true;
      await Promise.all(loops);
      loads.delete(load);
      return accepted;
    },
  };
  loads.add(load);
  return load;
}

function env(project: string, port: number, emulators: 'own' | 'shared', extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = { ...process.env };
  delete base.PUBSUB_EMULATOR_HOST;
  delete base.FIRESTORE_EMULATOR_HOST;
  if (emulators === 'shared') Object.assign(base, { PUBSUB_EMULATOR_HOST: sharedEmulators().pubsub, FIRESTORE_EMULATOR_HOST: sharedEmulators().firestore });
  return {
    ...base,
    PORT: String(port),
    HERALD_PROJECT_ID: project,
    HERALD_ADMIN_TOKEN: ADMIN_TOKEN,
    HERALD_INGEST_TOKEN: INGEST_TOKEN,
    HERALD_SECRETS_KEY: SECRETS_KEY,
    HERALD_LOG_LEVEL: 'INFO',
    ...extra,
  };
}

/** Starts a Herald, registers the slow receiver and runs the publishers until some deliveries are under way. */
async function underLoad(herald: Herald, destination: string, prefix: string): Promise<ReturnType<typeof publish>> {
  expect(await herald.admin('PUT', `/destinations/${destination}`, { url: `${receiver.url}/${destination}`, eventTypes: ['com.example.stop'] })).toBe(201);
  const load = publish(herald.url, prefix);
  const before = receiver.requests.length;
  await eventually('deliveries under way', () => (receiver.requests.length >= before + 4 && load.accepted.length >= 50 ? true : undefined), 20_000);
  return load;
}

test('SIGTERM under load, emulators of its own: drains, stops them, exits 0 within 10 s', async () => {
  const herald = await Herald.start(env('local-stop-own', 0, 'own'));
  const groups = emulatorGroups(herald.output);
  expect(groups).toHaveLength(2);
  const load = await underLoad(herald, 'own', 'own');

  const sentAt = herald.signal('SIGTERM');
  const ended = await herald.exitWithin(15_000);
  await load.stop();

  expect(ended).toMatchObject({ code: 0 });
  expect(ended !== 'still running' && ended.at - sentAt).toBeLessThan(10_000);
  // It waited for requests under way, all of which ended in time, and nothing failed against stopped emulators.
  expect(Number(/stopping: (\d+) requests under way/.exec(herald.output)?.[1])).toBeGreaterThan(0);
  expect(herald.output).not.toMatch(/still in progress|did not end within|"severity":"ERROR"/);
  // The emulators it started, and every process in their groups (the Java ones too), are gone.
  await eventually('the emulators to be gone', () => (groups.every((g) => !groupAlive(g)) ? true : undefined), 2000);
});

test('Ctrl-C under load on reused emulators leaves them running and loses nothing; a second Ctrl-C exits at once', async () => {
  const project = 'local-stop-shared';
  await clearProject(project);
  const port = await freePort();
  // First run: one Ctrl-C under load, a clean stop.
  const first = await Herald.start(env(project, port, 'shared'));
  const load1 = await underLoad(first, 'shared', 'a');
  const sentAt = first.signal('SIGINT');
  const ended = await first.exitWithin(15_000);
  const accepted = await load1.stop();
  expect(ended).toMatchObject({ code: 0 });
  expect(ended !== 'still running' && ended.at - sentAt).toBeLessThan(10_000);
  expect(first.output).not.toMatch(/still in progress|did not end within|"severity":"ERROR"/);
  expect(await answers(sharedEmulators().pubsub)).toBe(true);
  expect(await answers(sharedEmulators().firestore)).toBe(true);

  // Second run on the same emulators and project, the receiver slower than the drain would
  // wait for: Ctrl-C, and Ctrl-C again, exits at once. Far slower than the 5 s drain, so that
  // the first stop is still waiting when the second Ctrl-C comes, however late the deliveries began.
  receiver.setResponder(() => ({ status: 204, delayMs: 20_000 }));
  const second = await Herald.start(env(project, port, 'shared'));
  const load2 = publish(second.url, 'b');
  const before = receiver.requests.length;
  await eventually('events accepted, deliveries under way', () => (load2.accepted.length >= 50 && receiver.requests.length > before ? true : undefined), 20_000);
  second.signal('SIGINT');
  await new Promise((r) => setTimeout(r, 1000));
  const againAt = second.signal('SIGINT');
  const forced = await second.exitWithin(5000);
  accepted.push(...(await load2.stop()));
  expect(forced).toMatchObject({ code: 130 });
  expect(forced !== 'still running' && forced.at - againAt).toBeLessThan(1000);
  expect(await answers(sharedEmulators().pubsub)).toBe(true);

  // (Quick now: the emulator pushes at most 2 at a time per subscription.)
  receiver.setResponder(() => ({ status: 204 }));
  expect(second.output).toMatch(/SIGINT again: exiting now/);

  // Third run: every event either run accepted reaches the receiver (pushes come again; the
  // reconciler, told to look early, makes any record a cut-off request had not written).
  const third = await Herald.start(env(project, port, 'shared', { HERALD_RECONCILE_AFTER_MS: '3000', HERALD_RECONCILE_INTERVAL_MS: '1000' }));
  await eventually(
    'every accepted event at the receiver',
    () => {
      const seen = received();
      return accepted.every((id) => seen.has(id)) ? true : undefined;
    },
    30_000,
    250,
  ).catch(async (e: Error) => {
    const seen = received();
    const missing = accepted.filter((id) => !seen.has(id));
    // What Herald holds of each, and what each run logged of it: a loss is diagnosed from the failure alone.
    const detail = await Promise.all(
      missing.slice(0, 3).map(async (id) => {
        const logged = [first, second, third].flatMap((h, run) => h.output.split('\n').filter((l) => l.includes(`"${id}"`)).map((l) => `run ${run + 1}: ${l.slice(0, 600)}`));
        return `${id}: ${await third.read(`/destinations/shared/deliveries?eventId=${id}`)}\n${logged.slice(0, 10).join('\n')}`;
      }),
    );
    throw new Error(`${e.message}: ${missing.length} of ${accepted.length} never received, e.g. ${missing.slice(0, 5).join(', ')}\n${detail.join('\n')}`);
  });
  const stopAt = third.signal('SIGTERM');
  const last = await third.exitWithin(15_000);
  expect(last).toMatchObject({ code: 0 });
  expect(last !== 'still running' && last.at - stopAt).toBeLessThan(10_000);
  expect(await answers(sharedEmulators().firestore)).toBe(true);
  await clearProject(project);
});
