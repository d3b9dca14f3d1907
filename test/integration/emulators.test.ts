// Starts a second, private emulator pair next to the one from globalSetup, and checks that it
// serves the real clients, resets, and dies completely on stop().
import { readdirSync, readFileSync } from 'node:fs';
import { Firestore } from '@google-cloud/firestore';
import { PubSub } from '@google-cloud/pubsub';
import { freePort, resetEmulators, type RunningEmulators, startEmulators } from '../../apps/local/emulators';
import { checkPrerequisites } from '../../apps/local/emulator-prerequisites';
import { groupAlive } from '../../apps/local/emulator-processes';

jest.setTimeout(60_000);

const PROJECT = 'herald-emulator-test';
const bareEnv: NodeJS.ProcessEnv = { ...process.env };
delete bareEnv.PUBSUB_EMULATOR_HOST;
delete bareEnv.FIRESTORE_EMULATOR_HOST;

async function get(url: string): Promise<{ status: number; body: string } | undefined> {
  try {
    const response = await fetch(url, { headers: { Authorization: 'Bearer owner' }, signal: AbortSignal.timeout(2000) });
    return { status: response.status, body: (await response.text()).trim() };
  } catch {
    return undefined;
  }
}

/** Live processes whose command line names this port (gcloud's python, the shell wrapper, java). */
function processesOnPort(port: string): { pid: number; pgid: number }[] {
  const found: { pid: number; pgid: number }[] = [];
  for (const entry of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (!cmdline.includes(`127.0.0.1:${port}`) && !cmdline.includes(`--port=${port}`)) continue;
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (state !== 'Z') found.push({ pid: Number(entry), pgid: Number(pgrp) });
    } catch {
      // exited while we looked
    }
  }
  return found;
}

const portOf = (host: string): string => host.split(':').pop() ?? '';

/** FIRESTORE_EMULATOR_HOST (set by globalSetup) overrides an explicit `host`, so hide it while constructing. */
function firestoreAt(host: string): Firestore {
  const saved = process.env.FIRESTORE_EMULATOR_HOST;
  delete process.env.FIRESTORE_EMULATOR_HOST;
  try {
    return new Firestore({ projectId: PROJECT, host, ssl: false });
  } finally {
    if (saved !== undefined) process.env.FIRESTORE_EMULATOR_HOST = saved;
  }
}

describe('startEmulators with nothing in the environment', () => {
  let second: RunningEmulators;
  let firestore: Firestore | undefined;
  let pubsub: PubSub | undefined;

  beforeAll(async () => {
    second = await startEmulators({ env: bareEnv });
  }, 60_000);

  afterAll(async () => {
    await firestore?.terminate();
    await pubsub?.close();
    await second?.stop();
  });

  // Without starting gcloud (test/unit/emulator-prerequisites.test.ts shows it); how long it takes is no assertion.
  it("finds this machine's prerequisites", async () => {
    await expect(checkPrerequisites({ env: bareEnv })).resolves.toMatch(/gcloud$/);
  });

  it('starts both on fresh loopback ports, apart from the globalSetup pair', async () => {
    // globalSetup's exports reach the workers.
    expect(process.env.PUBSUB_EMULATOR_HOST).toBeTruthy();
    expect(process.env.FIRESTORE_EMULATOR_HOST).toBeTruthy();
    expect(process.env.METADATA_SERVER_DETECTION).toBe('none');
    expect(second.started).toEqual({ pubsub: true, firestore: true });
    expect(second.pubsubHost).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(second.firestoreHost).toMatch(/^127\.0\.0\.1:\d+$/);
    expect([second.pubsubHost, second.firestoreHost]).not.toContain(process.env.PUBSUB_EMULATOR_HOST);
    expect([second.pubsubHost, second.firestoreHost]).not.toContain(process.env.FIRESTORE_EMULATOR_HOST);
    for (const host of [second.pubsubHost, second.firestoreHost]) {
      expect(await get(`http://${host}/`)).toEqual({ status: 200, body: 'Ok' });
    }
  });

  it('serves the Firestore and Pub/Sub clients, and resetEmulators wipes them', async () => {
    firestore = firestoreAt(second.firestoreHost);
    await firestore.doc('harness/probe').set({ n: 1 });
    expect((await firestore.doc('harness/probe').get()).data()).toEqual({ n: 1 });

    pubsub = new PubSub({ projectId: PROJECT, apiEndpoint: second.pubsubHost });
    const [topic] = await pubsub.createTopic('harness-probe');
    expect(topic.name).toBe(`projects/${PROJECT}/topics/harness-probe`);

    // Asked over REST of the second pair, so the clients demonstrably went there.
    const docUrl = `http://${second.firestoreHost}/v1/projects/${PROJECT}/databases/(default)/documents/harness/probe`;
    const topicUrl = `http://${second.pubsubHost}/v1/projects/${PROJECT}/topics/harness-probe`;
    expect((await get(docUrl))?.status).toBe(200);
    expect((await get(topicUrl))?.status).toBe(200);

    await resetEmulators(second, [PROJECT]);
    expect((await get(docUrl))?.status).toBe(404);
    expect((await get(topicUrl))?.status).toBe(404);
  });

  it('reuses hosts from the environment without starting or stopping anything', async () => {
    const reused = await startEmulators({
      env: { ...bareEnv, PUBSUB_EMULATOR_HOST: second.pubsubHost, FIRESTORE_EMULATOR_HOST: second.firestoreHost },
    });
    expect(reused.started).toEqual({ pubsub: false, firestore: false });
    expect(reused).toMatchObject({ pubsubHost: second.pubsubHost, firestoreHost: second.firestoreHost });
    await reused.stop();
    expect((await get(`http://${second.pubsubHost}/`))?.status).toBe(200);
    expect((await get(`http://${second.firestoreHost}/`))?.status).toBe(200);
  });

  it('waits for an emulator named in the environment that answers late (paused, as one catching up), and names one that never does', async () => {
    const group = second.processGroups.pubsub!;
    const said: string[] = [];
    process.kill(-group, 'SIGSTOP');
    const resumed = new Promise<void>((r) =>
      setTimeout(() => {
        process.kill(-group, 'SIGCONT');
        r();
      }, 3_000),
    );
    try {
      const reused = await startEmulators({ env: { ...bareEnv, PUBSUB_EMULATOR_HOST: second.pubsubHost, FIRESTORE_EMULATOR_HOST: second.firestoreHost }, log: (line) => said.push(line) });
      expect(reused.pubsubHost).toBe(second.pubsubHost);
      expect(said.join('\n')).toMatch(/Pub\/Sub emulator at .* does not answer yet .*waiting up to 15 s/);
    } finally {
      await resumed;
    }
    const nobody = `127.0.0.1:${await freePort()}`;
    await expect(startEmulators({ env: { ...bareEnv, PUBSUB_EMULATOR_HOST: nobody, FIRESTORE_EMULATOR_HOST: second.firestoreHost }, reusePatienceMs: 1_000 })).rejects.toThrow(
      `PUBSUB_EMULATOR_HOST=${nobody} is set, but no Pub/Sub emulator answered at http://${nobody}/ within 1 s (ECONNREFUSED). Unset PUBSUB_EMULATOR_HOST to let Herald start one`,
    );
  });

  it('mixes reuse and start, and stops only what it started', async () => {
    const mixed = await startEmulators({ env: { ...bareEnv, PUBSUB_EMULATOR_HOST: second.pubsubHost } });
    expect(mixed.started).toEqual({ pubsub: false, firestore: true });
    expect(mixed.firestoreHost).not.toBe(second.firestoreHost);
    await mixed.stop();
    expect(await get(`http://${mixed.firestoreHost}/`)).toBeUndefined();
    expect((await get(`http://${second.pubsubHost}/`))?.status).toBe(200);
  });

  it('stop() closes both ports and leaves no process of either group behind; again is a no-op', async () => {
    const hosts = [second.pubsubHost, second.firestoreHost];
    const before = hosts.flatMap((host) => processesOnPort(portOf(host)));
    const groups = [...new Set(before.map((p) => p.pgid))];
    expect(groups).toHaveLength(2); // one detached group per emulator, java included

    await second.stop();
    await second.stop();

    for (const host of hosts) expect(await get(`http://${host}/`)).toBeUndefined();
    for (const host of hosts) expect(processesOnPort(portOf(host))).toEqual([]);
    for (const pgid of groups) expect(groupAlive(pgid)).toBe(false);
  });
});
