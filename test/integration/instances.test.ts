import { Receiver } from '../support/receiver';
import { startTestStack, TestStack } from '../support/stack';
import { eventually } from '../support/eventually';
import { patient } from '../support/patience';

/**
 * The deployed shape, locally: two instances of the functions on one pair of emulators, each
 * with a runtime of its own, behind one endpoint per function that sends each request to the
 * next instance. The bugs of instances that disagree need both halves shown here: requests
 * really are spread, and each instance really keeps its own state.
 */
let stack: TestStack;
const receiver = new Receiver();
/** The directory's cache: long enough that instance 1 cannot have looked again by itself during a check. */
const CACHE_MS = 5_000;

beforeAll(async () => {
  await receiver.start();
  stack = await startTestStack(`instances-test-${Date.now().toString(36)}`, { HERALD_DESTINATION_CACHE_MS: String(CACHE_MS) }, { instances: 2 });
});

afterAll(async () => {
  await stack?.stop({ purge: true });
  await receiver.stop();
});

const linesFrom = (from: number, message: RegExp) => stack.logs.slice(from).filter((l) => message.test(String(l.message)));
const ingest = (id: string, type: string) =>
  stack.ingest({ 'ce-id': id, 'ce-source': '/instances', 'ce-type': type, 'ce-specversion': '1.0', 'content-type': 'application/json' }, JSON.stringify({ id }));

test('two instances, each a runtime of its own', () => {
  expect(stack.runtimes).toHaveLength(2);
  const [a, b] = stack.runtimes;
  expect(a).toBe(stack.runtime);
  for (const part of ['directory', 'keys', 'limiter', 'slow', 'counters', 'firestore', 'pubsub', 'accountPolicies', 'publishQuotas'] as const) expect(a![part]).not.toBe(b![part]);
});

test('admin, ingest and deliver requests go to the instances in turn, each handled with that instance’s runtime', async () => {
  // Each instance's attempts land in its own counters: the deliver push ran on that runtime.
  const attempts = stack.runtimes.map((rt) => jest.spyOn(rt.counters, 'record'));
  const from = stack.logs.length;
  for (const id of ['spread-a', 'spread-b']) {
    expect((await stack.admin('PUT', `/destinations/${id}`, { url: `${receiver.url}/${id}`, eventTypes: ['com.spread.*'] })).status).toBe(201);
  }
  for (let i = 0; i < 8; i++) expect((await ingest(`s-${i}`, 'com.spread.tick')).status).toBe(202);
  await receiver.waitFor(8, '/spread-a');
  await receiver.waitFor(8, '/spread-b');

  expect(linesFrom(from, /^audit: PUT/).map((l) => l.instance)).toEqual([0, 1]);
  expect(linesFrom(from, /^event accepted/).map((l) => l.instance)).toEqual([0, 1, 0, 1, 0, 1, 0, 1]);
  // An attempt is counted just after the receiver answered it.
  const perInstance = await eventually('every attempt counted', () => {
    const counted = attempts.map((spy) => spy.mock.calls.length);
    return counted[0]! + counted[1]! >= 16 ? counted : undefined;
  });
  expect(perInstance[0]).toBeGreaterThanOrEqual(4);
  expect(perInstance[1]).toBeGreaterThanOrEqual(4);
  for (const spy of attempts) spy.mockRestore();
});

test("each instance's directory is its own: a change through one is seen by the other only when it looks again", async () => {
  expect((await stack.admin('PUT', '/destinations/moving', { url: `${receiver.url}/moving`, eventTypes: ['com.before.*'] })).status).toBe(201);
  // Both know it (a miss makes a directory look at the change log at once); neither looks again for CACHE_MS.
  for (const rt of stack.runtimes) expect((await rt.directory.get('moving'))?.eventTypes).toEqual(['com.before.*']);
  // When each last looked, as its cache counts it (from the start of the look). A time taken
  // here instead is later by however long the gets took, which a busy machine stretches past
  // the cache: the other then looked again, rightly, where the check still expected it stale.
  const lookedAt = stack.runtimes.map((rt) => (rt.directory as unknown as { lookedAt: number }).lookedAt);

  const from = stack.logs.length;
  expect((await stack.admin('PUT', '/destinations/moving', { url: `${receiver.url}/moving`, eventTypes: ['com.after.*'] })).status).toBe(200);
  const [audit] = linesFrom(from, /^audit: PUT/);
  const writer = audit!.instance as number;
  const other = 1 - writer;

  const seen = async (i: number) => (await stack.runtimes[i]!.directory.matching('com.after.x')).map((d) => d.id);
  expect(await seen(writer)).toEqual(['moving']);
  const stale = await seen(other);
  // Meaningful only while the other's cache has not expired (a very slow machine would let it look again).
  if (Date.now() - lookedAt[other]! < CACHE_MS) expect(stale).toEqual([]);
  await eventually('the other instance to see the change', async () => ((await seen(other)).includes('moving') ? true : undefined), patient(CACHE_MS * 3));
});
