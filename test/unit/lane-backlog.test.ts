import { MemoryDeliveryStore } from '../../shared/adapters/memory/delivery-store';
import { MemoryDestinationStore } from '../../shared/adapters/memory/destination-store';
import { MemoryIntakeStore } from '../../shared/adapters/memory/intake-store';
import { MemoryLaneMarks } from '../../shared/adapters/memory/lane-marks';
import { deliverFromLane } from '../../shared/app/delivery/deliver';
import { LaneBacklog } from '../../shared/app/lanes/lane-backlog';
import { reconcileOnce } from '../../shared/app/intake/reconcile';
import { deliveryId } from '../../shared/domain/retry/delivery';
import { applySpec, destinationSpecSchema } from '../../shared/domain/destinations/destination';
import { eventKey, HeraldEvent } from '../../shared/domain/events/event';
import { behindAfterMs, laneBehind, laneOfSubscription, markEveryMs, shouldMark } from '../../shared/domain/intake/lane-backlog';
import { toLaneMessage } from '../../shared/domain/intake/lane-message';
import { createLogger } from '../../shared/log';
import { Clock } from '../../shared/ports/clock';
import { laneTopicOf, sharedLaneFor } from '../../shared/topology';
import { memoryDeliverDeps } from '../support/memory-deliver';
import { memoryReconcileDeps } from '../support/recovery';

/**
 * A lane seen behind (issue 51, item 5): a destination that never leases its rate (under the
 * unleased allowance) sits on a shared lane its neighbours have backed up; its record is missing
 * because its message is late, and the reconciler must wait for it rather than send it twice.
 */

const GRACE = 60_000;
const event = (id: string): HeraldEvent => ({ attributes: { specversion: '1.0', id, source: '/s', type: 't' }, data: Buffer.from('{}') });
const fixedClock = (at: { now: number }): Clock => ({ now: () => new Date(at.now) });

describe('the rules', () => {
  test('a lane is behind when a message comes long after it was published; marked at most every third of the activity window', () => {
    expect(behindAfterMs(GRACE)).toBe(10_000);
    expect(behindAfterMs(6_000)).toBe(1_000);
    expect(markEveryMs(GRACE)).toBe(10_000);
    const now = 1_000_000;
    expect(shouldMark(undefined, now - 5_000, now, GRACE)).toBe(false);
    expect(shouldMark(undefined, now - 11_000, now, GRACE)).toBe(true);
    expect(shouldMark(now - 9_000, now - 11_000, now, GRACE)).toBe(false);
    expect(shouldMark(now - 10_000, now - 11_000, now, GRACE)).toBe(true);
    expect(laneBehind(now - 30_000, now, GRACE)).toBe(true);
    expect(laneBehind(now - 30_001, now, GRACE)).toBe(false);
    expect(laneBehind(undefined, now, GRACE)).toBe(false);
  });

  test("a push subscription's lane is its topic", () => {
    expect(laneOfSubscription('projects/p/subscriptions/herald-shard-3-deliver')).toBe('herald-shard-3');
    expect(laneOfSubscription('herald-lane-orders-deliver')).toBe('herald-lane-orders');
    expect(laneOfSubscription('projects/p/subscriptions/herald-batch-gather')).toBeUndefined();
    expect(laneOfSubscription('projects/p/subscriptions/-deliver')).toBeUndefined();
  });
});

describe('deliver marks the lane', () => {
  test('a first attempt taken long after its publish marks its lane, once per interval; a fresh one or a claimed retry marks nothing', async () => {
    const destinations = new MemoryDestinationStore();
    await destinations.put(applySpec('d', destinationSpecSchema.parse({ url: 'https://hooks.example.com/d' }), undefined, new Date(Date.now() - 60_000)));
    const marks = new MemoryLaneMarks();
    const at = { now: Date.now() };
    const backlog = new LaneBacklog(marks, fixedClock(at), createLogger({ write: () => undefined }), GRACE);
    const h = memoryDeliverDeps(destinations, { http: { send: async () => ({ kind: 'response', status: 204, durationMs: 1, bodyExcerpt: '' }) } }, { laneBacklog: backlog });
    const subscription = `projects/p/subscriptions/${sharedLaneFor('d', 'first')}-deliver`;
    const push = (id: string, ageMs: number) => ({ subscription, messageId: id, publishTime: new Date(at.now - ageMs), message: toLaneMessage({ kind: 'first', destinationId: 'd', event: event(id), publishedAt: new Date(at.now - ageMs).toISOString() }) });
    await deliverFromLane(h.deps, push('fresh', 1_000));
    expect(marks.writes).toBe(0);
    await deliverFromLane(h.deps, push('late-1', 20_000));
    await deliverFromLane(h.deps, push('late-2', 20_000));
    expect(marks.writes).toBe(1);
    expect(marks.marks.get(sharedLaneFor('d', 'first'))).toBe(at.now);
    at.now += markEveryMs(GRACE);
    await deliverFromLane(h.deps, push('late-3', 20_000));
    expect(marks.writes).toBe(2);
    // A retry the pump claimed is old by nature: it says nothing of its lane.
    at.now += markEveryMs(GRACE);
    const claimed = toLaneMessage({ kind: 'claimed', destinationId: 'd', event: event('late-1'), claim: 'c', publishedAt: new Date(at.now - 60_000).toISOString() });
    await deliverFromLane(h.deps, { subscription: `projects/p/subscriptions/${sharedLaneFor('d', 'retry')}-deliver`, messageId: 'c', publishTime: new Date(at.now - 60_000), message: claimed });
    expect(marks.writes).toBe(2);
  });
});

describe('the reconciler', () => {
  async function world(marks: MemoryLaneMarks) {
    const destinations = new MemoryDestinationStore();
    await destinations.put(applySpec('quiet', destinationSpecSchema.parse({ url: 'https://hooks.example.com/q', eventTypes: ['t'] }), undefined, new Date(Date.now() - 10 * GRACE)));
    const intake = new MemoryIntakeStore();
    await intake.add({ id: 'i-1', acceptedAt: new Date(Date.now() - 2 * GRACE).toISOString(), events: [event('late')] });
    const deliveries = new MemoryDeliveryStore();
    // The quiet destination never leased: no rate controller shows it moving.
    const deps = memoryReconcileDeps({
      intake,
      deliveries,
      destinations,
      graceMs: GRACE,
      laneMarks: marks,
      lanesOf: (d) => [laneTopicOf(d, 'first', { prefix: 'herald' }), laneTopicOf(d, 'retry', { prefix: 'herald' })],
    });
    return { deps, deliveries, id: deliveryId('quiet', eventKey(event('late').attributes)) };
  }

  test('a missing record of a destination whose lane was seen behind lately is waited for, not recovered', async () => {
    const marks = new MemoryLaneMarks();
    marks.marks.set(sharedLaneFor('quiet', 'first'), Date.now() - 5_000);
    const w = await world(marks);
    const report = await reconcileOnce(w.deps);
    expect(report).toMatchObject({ postponed: 1, recovered: 0 });
    expect(await w.deliveries.get(w.id)).toBeUndefined();
  });

  test('once the lane has not been seen behind for the activity window, the missing record is recovered', async () => {
    const marks = new MemoryLaneMarks();
    marks.marks.set(sharedLaneFor('quiet', 'first'), Date.now() - 31_000);
    const w = await world(marks);
    const report = await reconcileOnce(w.deps);
    expect(report).toMatchObject({ postponed: 0, recovered: 1 });
    expect((await w.deliveries.get(w.id))?.status).toBe('PENDING');
  });
});
