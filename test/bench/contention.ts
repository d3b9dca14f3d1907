import { ChildProcess } from 'node:child_process';
import { spawnLocalHerald } from '../support/local-herald';

/**
 * Concurrent writes to one document through the admin API (issue 32 item 8): 6 and 20 at
 * once of DELETE / PUT of one destination, PATCH of one account and DELETE of one key,
 * spread over one or more Herald processes (instances) on one project of the emulators.
 * Prints, per case, the statuses and the slowest and median answer.
 *
 *   PUBSUB_EMULATOR_HOST=… FIRESTORE_EMULATOR_HOST=… npx tsx test/bench/contention.ts [instances=2]
 */
const INSTANCES = Number(process.argv[2] ?? 2);
const PROJECT = `contention-${Date.now().toString(36)}`;
const TOKEN = 'contention-admin-token-0123456789';

async function startInstance(): Promise<{ proc: ChildProcess; url: string }> {
  const herald = spawnLocalHerald({
    ...process.env,
    PORT: '0',
    HERALD_PROJECT_ID: PROJECT,
    HERALD_ADMIN_TOKEN: TOKEN,
    HERALD_INGEST_TOKEN: 'contention-ingest-token-0123456789',
    HERALD_PUSH_TOKEN: 'contention-push-token-0123456789',
    HERALD_SECRETS_KEY: Buffer.alloc(32, 7).toString('base64'),
    HERALD_LOG_LEVEL: 'ERROR',
  });
  return { proc: herald.child, url: await herald.ready() };
}

interface Answer {
  status: number;
  ms: number;
  body: unknown;
}

async function call(base: string, method: string, p: string, body?: unknown): Promise<Answer> {
  const start = performance.now();
  const res = await fetch(`${base}/admin${p}`, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, ms: Math.round(performance.now() - start), body: text ? (JSON.parse(text) as unknown) : undefined };
}

function summary(name: string, answers: Answer[], extra = ''): void {
  const statuses: Record<number, number> = {};
  for (const a of answers) statuses[a.status] = (statuses[a.status] ?? 0) + 1;
  const ms = answers.map((a) => a.ms).sort((a, b) => a - b);
  const median = ms[Math.floor(ms.length / 2)]!;
  const failed = answers.filter((a) => a.status >= 500).map((a) => JSON.stringify(a.body));
  console.log(
    `${name.padEnd(28)} statuses ${JSON.stringify(statuses).padEnd(22)} median ${String(median).padStart(5)} ms  max ${String(ms[ms.length - 1]).padStart(5)} ms${extra}${failed.length ? `  5xx: ${failed[0]}` : ''}`,
  );
}

async function main(): Promise<void> {
  const instances = await Promise.all(Array.from({ length: INSTANCES }, () => startInstance()));
  const urls = instances.map((i) => i.url);
  const at = (i: number) => urls[i % urls.length]!;
  try {
    console.log(`${INSTANCES} instance(s), project ${PROJECT}`);
    await call(at(0), 'POST', '/accounts', { id: 'acme', name: 'Acme' });
    for (const n of [6, 20]) {
      for (let round = 0; round < 2; round++) {
        const id = `d${n}-${round}`;
        await call(at(0), 'PUT', `/destinations/${id}`, { url: 'http://127.0.0.1:9/x' });
        const deletes = await Promise.all(Array.from({ length: n }, (_, i) => call(at(i), 'DELETE', `/destinations/${id}`)));
        summary(`DELETE destination x${n}`, deletes);

        const pid = `p${n}-${round}`;
        const bodies = Array.from({ length: n }, (_, i) => ({ url: 'http://127.0.0.1:9/x', eventTypes: [`t.${i}`] }));
        const puts = await Promise.all(bodies.map((b, i) => call(at(i), 'PUT', `/destinations/${pid}`, b)));
        const final = (await call(at(0), 'GET', `/destinations/${pid}`)).body as { eventTypes: string[] };
        const oneSent = bodies.some((b) => JSON.stringify(b.eventTypes) === JSON.stringify(final.eventTypes));
        summary(`PUT destination x${n}`, puts, `  final is a body sent: ${oneSent}`);

        const patches = await Promise.all(Array.from({ length: n }, (_, i) => call(at(i), 'PATCH', '/accounts/acme', { name: `Acme ${i}` })));
        summary(`PATCH account x${n}`, patches);

        const key = (await call(at(0), 'POST', '/accounts/acme/keys', { name: `k${n}-${round}` })).body as { id: string };
        const revokes = await Promise.all(Array.from({ length: n }, (_, i) => call(at(i), 'DELETE', `/accounts/acme/keys/${key.id}`)));
        summary(`DELETE key x${n}`, revokes);

        const mixed = await Promise.all(
          Array.from({ length: n }, (_, i) =>
            i % 3 === 0 ? call(at(i), 'DELETE', `/destinations/${pid}`) : i % 3 === 1 ? call(at(i), 'PUT', `/destinations/${pid}`, bodies[i]) : call(at(i), 'POST', `/destinations/${pid}/suspend`, {}),
          ),
        );
        summary(`mixed DELETE/PUT/suspend x${n}`, mixed);
      }
    }
  } finally {
    for (const i of instances) i.proc.kill('SIGKILL');
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
