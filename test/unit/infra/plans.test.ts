import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import type { Firestore } from '@google-cloud/firestore';
import { FirestoreCounterStore } from '../../../shared/adapters/firestore/counters';
import { FIRESTORE_TTL_FIELDS } from '../../../shared/firestore-schema';
import { MAX_ATTEMPT_TIMEOUT_MS } from '../../../shared/domain/retry/delivery-policy';
import { FUNCTION_NAMES, heraldTopology, INTERNAL_FUNCTIONS, LANE_HANDLING_BUDGET_MS, laneTopology, PUMP_RUN_SECONDS, Topology } from '../../../shared/topology';
import { compositeIndexes, indexName } from '../../../infra/firestore-plan';
import { inDeployOrder, memoryMiB, nodeOptionsFor, planFunctions, RUN_SLACK_SECONDS } from '../../../infra/function-plan';

const names = { prefix: 'herald' };

describe('composite indexes, derived from the queries', () => {
  test.each([
    ['equality on a field, ordered by another', { q: { collection: 'c', equality: ['a'], orderBy: 'b' } }, [{ collection: 'c', fields: ['a', 'b'], order: 'ASCENDING' }]],
    ['two equalities, then the order', { q: { collection: 'c', equality: ['a', 'b'], orderBy: 'd' } }, [{ collection: 'c', fields: ['a', 'b', 'd'], order: 'ASCENDING' }]],
    ['ordered descending', { q: { collection: 'c', equality: ['a'], orderBy: 'b', direction: 'desc' as const } }, [{ collection: 'c', fields: ['a', 'b'], order: 'DESCENDING' }]],
    ['ordered by its own equality field: single-field index', { q: { collection: 'c', equality: ['a'], orderBy: 'a' } }, []],
    ['only an order: single-field index', { q: { collection: 'c', equality: [], orderBy: 'a' } }, []],
    ['array-contains, then the order', { q: { collection: 'c', contains: 'xs', equality: [], orderBy: 'a' } }, [{ collection: 'c', contains: 'xs', fields: ['a'], order: 'ASCENDING' }]],
    [
      'two queries needing the same index share it',
      { q1: { collection: 'c', equality: ['a'], orderBy: 'b' }, q2: { collection: 'c', equality: ['a'], orderBy: 'b' } },
      [{ collection: 'c', fields: ['a', 'b'], order: 'ASCENDING' }],
    ],
    [
      'the same fields in another collection are another index',
      { q1: { collection: 'c', equality: ['a'], orderBy: 'b' }, q2: { collection: 'd', equality: ['a'], orderBy: 'b' } },
      [
        { collection: 'c', fields: ['a', 'b'], order: 'ASCENDING' },
        { collection: 'd', fields: ['a', 'b'], order: 'ASCENDING' },
      ],
    ],
  ])('%s', (_what, queries, expected) => {
    expect(compositeIndexes(queries)).toEqual(expected);
  });

  test('index names are safe resource names', () => {
    expect(indexName({ collection: 'rate-control', fields: ['destinationId', 'a.b'], order: 'ASCENDING' })).toBe('rate-control-destinationId-a-b');
  });
});

test('the counter store writes the TTL field the program declares a policy for', async () => {
  const written: Record<string, unknown>[] = [];
  const db = {
    collection: () => ({ doc: (id: string) => id }),
    batch: () => ({ set: (_ref: string, doc: Record<string, unknown>) => void written.push(doc), commit: async () => undefined }),
  };
  await new FirestoreCounterStore(db as unknown as Firestore).add([{ destinationId: 'd', bucketStart: 0, attempts: 1, successes: 1, failures: 0, lastErrors: [] }], 0);
  expect(written[0]![FIRESTORE_TTL_FIELDS.rates.field]).toBeInstanceOf(Date);
  expect(FIRESTORE_TTL_FIELDS.rates).toEqual({ collection: 'rates', field: 'expireAt' });
});

test('Cloud Build installs the uploaded package without compiling it again', () => {
  const pkg = JSON.parse(readFileSync(path.join(__dirname, '../../../package.json'), 'utf8')) as { main: string; scripts: Record<string, string> };
  expect(pkg.scripts['gcp-build']).toBe('');
  expect(pkg.main).toMatch(/^dist\//);
});

describe('function plans', () => {
  const plans = planFunctions({ topology: heraldTopology(names), names, functions: {}, deliveryTimeoutMs: 5_000 });
  const plan = (name: string) => plans.find((p) => p.name === name)!;

  test('one per function, callers derived from the topology', () => {
    expect(plans.map((p) => p.name)).toEqual([...FUNCTION_NAMES]);
    expect(plan('route')).toMatchObject({ pushed: true, scheduled: false, userFacing: false });
    expect(plan('deliver')).toMatchObject({ pushed: true, scheduled: false, userFacing: false });
    // Scheduled each minute, and pushed a batcher's wake-up between runs.
    expect(plan('pump')).toMatchObject({ pushed: true, scheduled: true, userFacing: false });
    expect(plan('ingest')).toMatchObject({ pushed: false, scheduled: false, userFacing: true });
    for (const p of plans) expect(p.userFacing).toBe(!INTERNAL_FUNCTIONS.includes(p.name));
  });

  test('deliver is deployed before ingest and route, which publish the bundles only its release reads', () => {
    expect(plan('ingest').deployAfter).toEqual(['deliver']);
    expect(plan('route').deployAfter).toEqual(['deliver']);
    const order = inDeployOrder(plans).map((p) => p.name);
    expect(order.slice().sort()).toEqual([...FUNCTION_NAMES].sort());
    expect(order.indexOf('deliver')).toBeLessThan(order.indexOf('ingest'));
    expect(order.indexOf('deliver')).toBeLessThan(order.indexOf('route'));
    const circle = plans.map((p) => (p.name === 'deliver' ? { ...p, deployAfter: ['ingest' as const] } : p));
    expect(() => inDeployOrder(circle)).toThrow('functions deployed after each other in a circle: ingest → deliver → ingest');
  });

  test("V8's heap is sized to the function's memory, not the host's", () => {
    expect(memoryMiB('512Mi')).toBe(512);
    expect(memoryMiB('2Gi')).toBe(2048);
    expect(nodeOptionsFor('512Mi')).toBe('--max-old-space-size=192 --max-semi-space-size=4');
    expect(nodeOptionsFor('2Gi')).toBe('--max-old-space-size=768');
    expect(plan('deliver').nodeOptions).toBe(nodeOptionsFor(plan('deliver').memory));
    const bigger = planFunctions({ topology: heraldTopology(names), names, functions: { deliver: { memory: '1Gi' } }, deliveryTimeoutMs: 5_000 });
    expect(bigger.find((p) => p.name === 'deliver')!.nodeOptions).toBe('--max-old-space-size=384 --max-semi-space-size=4');
  });

  test('default timeouts: a scheduled run outlives its runSeconds; a pushed handler gets its ack deadline; the rest a minute', () => {
    const topology = heraldTopology(names);
    expect(plan('pump').timeoutSeconds).toBe(PUMP_RUN_SECONDS + RUN_SLACK_SECONDS);
    const pushes = [...topology.subscriptions, laneTopology('x', names).subscription];
    for (const p of plans.filter((f) => f.pushed && !f.scheduled)) {
      expect(p.timeoutSeconds).toBe(Math.min(...pushes.filter((s) => s.pushTo === p.name).map((s) => s.ackDeadlineSeconds)));
    }
    for (const p of plans.filter((f) => !f.pushed && !f.scheduled)) expect(p.timeoutSeconds).toBe(60);
    expect(plan('deliver').timeoutSeconds).toBe(60);
  });

  test("the longest attempt a policy may set fits the lane's push: inside the ack deadline, with room for Herald's own work", () => {
    const lane = laneTopology('x', names).subscription;
    expect(MAX_ATTEMPT_TIMEOUT_MS).toBeLessThanOrEqual(LANE_HANDLING_BUDGET_MS);
    expect(LANE_HANDLING_BUDGET_MS).toBeLessThan(lane.ackDeadlineSeconds * 1000);
    expect(plan('deliver').timeoutSeconds * 1000).toBeGreaterThan(MAX_ATTEMPT_TIMEOUT_MS);
  });

  test('a new schedule or push subscription is picked up from the topology alone', () => {
    const base = heraldTopology(names);
    const topology: Topology = {
      ...base,
      subscriptions: [...base.subscriptions, { name: 'herald-x', topic: base.topics.replay.name, pushTo: 'admin', ackDeadlineSeconds: 30, messageRetentionSeconds: 600 }],
      schedules: [...base.schedules, { name: 'herald-y', function: 'ingest', cron: '0 * * * *', runSeconds: 100 }],
    };
    const p = planFunctions({ topology, names, functions: {}, deliveryTimeoutMs: 5_000 });
    expect(p.find((f) => f.name === 'admin')).toMatchObject({ pushed: true, timeoutSeconds: 30 });
    expect(p.find((f) => f.name === 'ingest')).toMatchObject({ scheduled: true, timeoutSeconds: 100 + RUN_SLACK_SECONDS });
  });

  test('given sizes win over the defaults', () => {
    const p = planFunctions({ topology: heraldTopology(names), names, functions: { deliver: { maxInstances: 7, memory: '1Gi' } }, deliveryTimeoutMs: 5_000 });
    expect(p.find((f) => f.name === 'deliver')).toMatchObject({ maxInstances: 7, memory: '1Gi', concurrency: 80 });
  });
});
