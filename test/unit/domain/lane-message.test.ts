import { PushDelivery } from '../../../shared/domain/events/cloudevents-pubsub';
import { applySpec, Destination } from '../../../shared/domain/destinations/destination';
import { buildEvent, HeraldEvent } from '../../../shared/domain/events/event';
import { LaneMessage, LANE_ATTRIBUTES, purposeOf, readLaneMessage, toLaneMessage } from '../../../shared/domain/intake/lane-message';
import { laneStep } from '../../../shared/domain/delivery/lane-step';

const AT = new Date('2026-11-26T10:00:00Z');

function event(type = 'com.example.order.created', account?: string): HeraldEvent {
  const built = buildEvent({ specversion: '1.0', id: 'e1', source: '/shop', type, ...(account ? { heraldaccount: account } : {}) }, Buffer.from('{"n":1}'), AT);
  if (!built.ok) throw new Error(JSON.stringify(built.issues));
  return built.value;
}

function pushOf(message: ReturnType<typeof toLaneMessage>): PushDelivery {
  return { subscription: 'projects/p/subscriptions/herald-shard-0-deliver', messageId: 'm1', publishTime: new Date('2026-11-26T10:00:05Z'), message };
}

function destination(id: string, spec: Record<string, unknown> = { url: 'https://hooks.example.com/x' }): Destination {
  return applySpec(id, spec as Parameters<typeof applySpec>[1], undefined, AT);
}

describe('lane messages: what each writer publishes is what deliver reads', () => {
  const kinds: LaneMessage[] = [
    { kind: 'first', destinationId: 'orders', event: event(), publishedAt: AT.toISOString(), intake: 'batch-1' },
    { kind: 'handed-over', destinationId: 'orders', event: event(), publishedAt: AT.toISOString() },
    { kind: 'claimed', destinationId: 'acme_orders', event: event(), claim: '2026-11-26T10:00:01.000Z', publishedAt: AT.toISOString() },
  ];
  test.each(kinds)('$kind survives the round trip, on the lanes of its purpose', (message) => {
    const read = readLaneMessage(pushOf(toLaneMessage(message)));
    expect(read).toEqual({ ok: true, value: message });
    expect(purposeOf(message)).toBe(message.kind === 'first' ? 'first' : 'retry');
  });

  test("a claimed retry without a publish time is read with the push's", () => {
    const read = readLaneMessage(pushOf(toLaneMessage({ kind: 'claimed', destinationId: 'orders', event: event(), claim: 'c1' })));
    expect(read.ok && read.value.publishedAt).toBe('2026-11-26T10:00:05.000Z');
  });

  test('a message without a valid destination, or with a bad event, is foreign: every issue named', () => {
    const good = toLaneMessage({ kind: 'first', destinationId: 'orders', event: event(), publishedAt: AT.toISOString() });
    const noDestination = { ...good, attributes: { ...good.attributes } };
    delete noDestination.attributes[`herald-${LANE_ATTRIBUTES.destination}`];
    expect(readLaneMessage(pushOf(noDestination))).toEqual({ ok: false, issues: [{ path: 'attributes.herald-destination', message: 'a destination id is required' }] });
    const badId = { ...good, attributes: { ...good.attributes, [`herald-${LANE_ATTRIBUTES.destination}`]: 'Not An Id' } };
    expect(readLaneMessage(pushOf(badId)).ok).toBe(false);
    const noType = { ...good, attributes: { ...good.attributes } };
    delete noType.attributes['ce-type'];
    const read = readLaneMessage(pushOf(noType));
    expect(read.ok).toBe(false);
    expect(!read.ok && read.issues.map((i) => i.path)).toContain('attributes.ce-type');
  });
});

describe('what deliver does with a lane message', () => {
  const first = (type?: string): Parameters<typeof laneStep>[0] => ({ kind: 'first', destinationId: 'orders', event: event(type), publishedAt: AT.toISOString() });
  const never = () => {
    throw new Error('only a first attempt asks whether the destination is slow');
  };

  test('nothing can be sent: a dead letter, with the reason', () => {
    expect(laneStep(first(), undefined, never)).toMatchObject({ kind: 'unusable', reason: 'destination-deleted' });
    expect(laneStep(first('com.example.order.created'), destination('orders', { url: 'https://hooks.example.com/x', eventTypes: ['com.example.billing.*'] }), never)).toMatchObject({ kind: 'unusable', reason: 'type-unsubscribed' });
    expect(laneStep(first(), destination('acme_orders'), never)).toMatchObject({ kind: 'unusable', reason: 'type-unsubscribed', message: expect.stringContaining("not of the event's account") });
  });

  test('a suspended destination queues, before anything else', () => {
    const suspended = { ...destination('orders'), status: 'suspended' as const };
    expect(laneStep({ kind: 'claimed', destinationId: 'orders', event: event(), claim: 'c1', publishedAt: AT.toISOString() }, suspended, never)).toEqual({ kind: 'queue' });
  });

  test('a claimed retry carries its claim; a slow destination hands its first attempt over, once', () => {
    expect(laneStep({ kind: 'claimed', destinationId: 'orders', event: event(), claim: 'c1', publishedAt: AT.toISOString() }, destination('orders'), never)).toEqual({ kind: 'claimed', claim: 'c1' });
    expect(laneStep(first(), destination('orders'), () => true)).toEqual({ kind: 'hand-over' });
    expect(laneStep(first(), destination('orders'), () => false)).toEqual({ kind: 'first' });
    expect(laneStep(first(), destination('orders', { url: 'https://hooks.example.com/x', lane: 'dedicated' }), () => true)).toEqual({ kind: 'first' });
    expect(laneStep({ ...first(), kind: 'handed-over' }, destination('orders'), never)).toEqual({ kind: 'first' });
  });
});
