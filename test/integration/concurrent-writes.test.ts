import { ChildProcess } from 'node:child_process';
import { Firestore } from '@google-cloud/firestore';
import { killed, spawnLocalHerald } from '../support/local-herald';
import { startTestStack, TestStack, testSecretsKey } from '../support/stack';

/**
 * Issue 32 item 8: many writes to one document at once, through the admin API of two Herald
 * instances on one project (this process's stack, and `npm start` in a child process), as a
 * deployed function's several instances would take them. Each answers correctly, none with 5xx,
 * and none takes a Firestore transaction. On the old code (Firestore transactions, whose locks
 * the emulator serialises) each took 3–7.6 s, and under a mixed load some ended 500 "Transaction
 * lock timeout". How long they take is the bench's to say (test/bench/contention.ts prints the
 * median and slowest answer per case), not an assertion here: on a busy machine a sound answer
 * took 12 s.
 */
const RUN = Date.now().toString(36);
const PROJECT = `concurrent-writes-${RUN}`;
const ENV = {
  HERALD_ADMIN_TOKEN: 'concurrent-writes-admin-token-0123456789',
  HERALD_INGEST_TOKEN: 'concurrent-writes-ingest-token-0123456789',
  HERALD_PUSH_TOKEN: 'concurrent-writes-push-token-0123456789',
  HERALD_SECRETS_KEY: testSecretsKey(PROJECT),
};
const N = 20;

let stack: TestStack;
let child: ChildProcess | undefined;
/** The two instances' base URLs: this process's stack, then the child's. */
let bases: string[] = [];

interface Answer {
  status: number;
  body: unknown;
}

/** `npm start` in a process of its own on the same project: a second instance. */
async function startHeraldProcess(): Promise<{ process: ChildProcess; url: string }> {
  const herald = spawnLocalHerald({ ...process.env, ...ENV, HERALD_PROJECT_ID: PROJECT, PORT: '0', HERALD_LOG_LEVEL: 'WARNING' });
  return { process: herald.child, url: await herald.ready() };
}

async function call(base: string, method: string, p: string, body?: unknown): Promise<Answer> {
  const res = await fetch(`${base}/admin${p}`, {
    method,
    headers: { authorization: `Bearer ${ENV.HERALD_ADMIN_TOKEN}`, 'content-type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as unknown) : undefined };
}

/**
 * `n` requests at once, alternating between the two instances; with the Firestore transactions
 * this process began meanwhile (its instance takes half the requests; the stack is otherwise idle).
 */
async function burst(n: number, one: (base: string, i: number) => Promise<Answer>): Promise<Answer[] & { transactions: number }> {
  const transactions = jest.spyOn(Firestore.prototype, 'runTransaction');
  try {
    const answers = await Promise.all(Array.from({ length: n }, (_, i) => one(bases[i % bases.length]!, i)));
    return Object.assign(answers, { transactions: transactions.mock.calls.length });
  } finally {
    transactions.mockRestore();
  }
}

const statuses = (answers: Answer[]) => answers.map((a) => a.status).sort((a, b) => a - b);

/**
 * None was 5xx (the bodies of any that were, to see why), and none took a transaction: its lock
 * is what serialised them (seconds each) and timed some out.
 */
function expectUnlockedAndSound(answers: Answer[] & { transactions: number }): void {
  expect(answers.filter((a) => a.status >= 500).map((a) => a.body)).toEqual([]);
  expect(answers.transactions).toBe(0);
}

beforeAll(async () => {
  const [own, other] = await Promise.all([startTestStack(PROJECT, ENV), startHeraldProcess()]);
  stack = own;
  child = other.process;
  bases = [stack.url, other.url];
  // Each instance's first Firestore call opens its channel: not what is measured here.
  for (const base of bases) expect((await call(base, 'GET', '/destinations')).status).toBe(200);
  expect((await call(bases[0]!, 'POST', '/accounts', { id: 'acme', name: 'Acme' })).status).toBe(201);
}, 90_000);

afterAll(async () => {
  await killed(child);
  await stack?.stop({ purge: true });
});

test(`${N} DELETEs of one destination across two instances: one 204, the rest 404, none locked`, async () => {
  for (const round of [1, 2]) {
    expect((await call(bases[0]!, 'PUT', `/destinations/gone-${round}`, { url: 'http://127.0.0.1:9/hook' })).status).toBe(201);
    const answers = await burst(N, (base) => call(base, 'DELETE', `/destinations/gone-${round}`));
    expectUnlockedAndSound(answers);
    expect(statuses(answers)).toEqual([204, ...Array<number>(N - 1).fill(404)]);
    for (const base of bases) expect((await call(base, 'GET', `/destinations/gone-${round}`)).status).toBe(404);
  }
});

test(`${N} PUTs of one destination across two instances: one 201, the rest 200 (the last writer wins), none locked`, async () => {
  const bodies = Array.from({ length: N }, (_, i) => ({ url: 'http://127.0.0.1:9/hook', eventTypes: [`test.put.${i}`] }));
  const answers = await burst(N, (base, i) => call(base, 'PUT', '/destinations/contested', bodies[i]));
  expectUnlockedAndSound(answers);
  expect(statuses(answers)).toEqual([...Array<number>(N - 1).fill(200), 201]);
  // Every instance reads one whole body that was sent, never a mix of two.
  const finals = await Promise.all(bases.map(async (base) => ((await call(base, 'GET', '/destinations/contested')).body as { eventTypes: string[] }).eventTypes));
  expect(finals[0]).toEqual(finals[1]);
  expect(bodies.map((b) => b.eventTypes)).toContainEqual(finals[0]);
});

test(`${N} DELETEs, PUTs and suspends of one destination at once: every answer one the API documents, none locked`, async () => {
  expect((await call(bases[0]!, 'PUT', '/destinations/mixed', { url: 'http://127.0.0.1:9/hook' })).status).toBe(201);
  const answers = await burst(N, (base, i) =>
    i % 3 === 0 ? call(base, 'DELETE', '/destinations/mixed') : i % 3 === 1 ? call(base, 'PUT', '/destinations/mixed', { url: 'http://127.0.0.1:9/hook', eventTypes: [`test.mixed.${i}`] }) : call(base, 'POST', '/destinations/mixed/suspend', {}),
  );
  expectUnlockedAndSound(answers);
  for (const a of answers) expect([200, 201, 204, 404, 409]).toContain(a.status);
});

test(`${N} PATCHes of one account across two instances: all 200, none locked, one of the names sent`, async () => {
  const answers = await burst(N, (base, i) => call(base, 'PATCH', '/accounts/acme', { name: `Acme ${i}` }));
  expectUnlockedAndSound(answers);
  expect(statuses(answers)).toEqual(Array<number>(N).fill(200));
  const name = ((await call(bases[1]!, 'GET', '/accounts/acme')).body as { name: string }).name;
  expect(Array.from({ length: N }, (_, i) => `Acme ${i}`)).toContain(name);
});
