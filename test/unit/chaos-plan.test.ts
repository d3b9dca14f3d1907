import { isQuiet, ledgerFor, RecordState } from '../chaos/ledger';
import { chaosOptionsChecked, chaosOptionsSchema, planChaos, seededRandom } from '../chaos/scenario';

/** The chaos test's own rules: a seed plays the same run again, and the ledger calls a loss a loss. */

test('the same seed plans the same run; another seed another', () => {
  const options = chaosOptionsSchema.parse({ seed: 42 });
  expect(planChaos(options)).toEqual(planChaos(options));
  expect(planChaos(options).kills).not.toEqual(planChaos({ ...options, seed: 43 }).kills);
  const a = seededRandom(7);
  const b = seededRandom(7);
  expect([a(), a(), a()]).toEqual([b(), b(), b()]);
});

test('kills fall one in each part of the run, from 10 % to 130 % of the publishing; receivers take the behaviours in turn', () => {
  const plan = planChaos(chaosOptionsSchema.parse({ seed: 1, events: 2000, rate: 50, kills: 2, destinations: 5 }));
  expect(plan.publishMs).toBe(40_000);
  expect(plan.kills[0]).toBeGreaterThanOrEqual(4_000);
  expect(plan.kills[0]).toBeLessThanOrEqual(28_000);
  expect(plan.kills[1]).toBeGreaterThanOrEqual(28_000);
  expect(plan.kills[1]).toBeLessThanOrEqual(52_000);
  expect(plan.receivers.map((r) => r.behaviour)).toEqual(['healthy', 'flaky', 'outage', 'slow', 'healthy']);
  expect(plan.receivers[2]!.window!.toMs - plan.receivers[2]!.window!.fromMs).toBe(20_000);
});

test('options out of range are refused with what is wrong', () => {
  const r = chaosOptionsSchema.safeParse({ seed: -1, events: 0, destinations: 30 });
  expect(r.success).toBe(false);
  expect(r.error!.issues.map((i) => i.message)).toEqual(expect.arrayContaining(['seed must be 0-2147483647', 'events must be at least 1', 'destinations must be 1-20']));
});

test('Herald runs as one instance unless --instances says more (1-16)', () => {
  expect(chaosOptionsSchema.parse({ seed: 1 }).instances).toBe(1);
  expect(chaosOptionsSchema.parse({ seed: 1, instances: 3 }).instances).toBe(3);
  expect(chaosOptionsSchema.safeParse({ seed: 1, instances: 0 }).error!.issues.map((i) => i.message)).toEqual(['instances must be 1-16']);
});

test('events go one per POST unless --per-post says more (1-100, a CloudEvents batch)', () => {
  expect(chaosOptionsSchema.parse({ seed: 1 }).perPost).toBe(1);
  expect(chaosOptionsSchema.parse({ seed: 1, perPost: 20 }).perPost).toBe(20);
  expect(chaosOptionsSchema.safeParse({ seed: 1, perPost: 101 }).error!.issues.map((i) => i.message)).toEqual(['per-post must be 1-100']);
});

describe('the ledger', () => {
  const counts = (accepted: Record<string, number>, firstAccepted: string[] = Object.keys(accepted)) => ({ requests: new Map(Object.entries(accepted)), accepted: new Map(Object.entries(accepted)), firstAccepted });
  const wid = (key: string) => `msg_${key}`;

  test('each pair lands in exactly one column; duplicates are extra 2xx receptions', () => {
    const records = new Map<string, RecordState>([
      ['d.k1', { status: 'DELIVERED' }],
      ['d.k2', { status: 'DEAD' }],
      ['d.k3', { status: 'QUEUED' }],
      ['d.k4', { status: 'PENDING', availableAt: '2026-11-25T10:00:00.000Z' }],
      ['d.k5', { status: 'IN_FLIGHT', claimedAt: '2026-11-25T10:00:00.000Z' }],
    ]);
    const l = ledgerFor('d', ['k1', 'k2', 'k3', 'k4', 'k5'], records, counts({ msg_k1: 3 }), wid);
    expect(l).toMatchObject({ expected: 5, delivered: 1, dead: 1, queued: 1, scheduled: 2, lost: 0, duplicates: 2 });
    expect(isQuiet([l])).toBe(false);
  });

  test('no record, a DELIVERED record the receiver never accepted, or PENDING with no time: lost', () => {
    const records = new Map<string, RecordState>([
      ['d.k2', { status: 'DELIVERED' }],
      ['d.k3', { status: 'PENDING' }],
    ]);
    const l = ledgerFor('d', ['k1', 'k2', 'k3'], records, counts({}), wid);
    expect(l.lost).toBe(3);
    expect(l.lostExamples).toEqual(['d.k1: no delivery record and never received', 'd.k2: DELIVERED, but the receiver never answered 2xx for it', 'd.k3: PENDING with no due time']);
  });

  test('an ordered key\'s event first received after a later place of its key is an inversion; other keys and unordered events are not', () => {
    const records = new Map<string, RecordState>([
      ['d.k1', { status: 'DELIVERED', order: { key: 'a', seq: 1 } }],
      ['d.k2', { status: 'DELIVERED', order: { key: 'a', seq: 2 } }],
      ['d.k3', { status: 'DELIVERED', order: { key: 'b', seq: 1 } }],
      ['d.k4', { status: 'DELIVERED' }],
    ]);
    const inOrder = ledgerFor('d', ['k1', 'k2', 'k3', 'k4'], records, counts({ msg_k1: 1, msg_k2: 1, msg_k3: 1, msg_k4: 1 }, ['msg_k3', 'msg_k4', 'msg_k1', 'msg_k2']), wid);
    expect(inOrder.inversions).toBe(0);
    const inverted = ledgerFor('d', ['k1', 'k2', 'k3', 'k4'], records, counts({ msg_k1: 1, msg_k2: 1, msg_k3: 1, msg_k4: 1 }, ['msg_k2', 'msg_k4', 'msg_k1', 'msg_k3']), wid);
    expect(inverted.inversions).toBe(1);
  });
});

test('--rehearsal: the same kills, pauses and receivers as without it, and one rolling restart while publishing; not with in-process options', () => {
  const options = chaosOptionsSchema.parse({ seed: 5, events: 2000, rate: 50 });
  const plain = planChaos(options);
  const { rollingRestartAtMs, ...rest } = planChaos({ ...options, rehearsal: true });
  expect(rest).toEqual(plain);
  expect(plain.rollingRestartAtMs).toBeUndefined();
  expect(rollingRestartAtMs).toBeGreaterThanOrEqual(8_000);
  expect(rollingRestartAtMs).toBeLessThanOrEqual(20_000);
  expect(chaosOptionsChecked.safeParse({ seed: 1, rehearsal: true, instances: 2 }).error?.issues[0]?.message).toMatch(/not with --instances/);
  expect(chaosOptionsChecked.safeParse({ seed: 1, rehearsal: true }).success).toBe(true);
});
