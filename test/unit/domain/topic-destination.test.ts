import { CloudEvent } from 'cloudevents';
import { fromPubSubMessage } from '../../../shared/domain/events/cloudevents-pubsub';
import { AttemptResult, describeFailure, HeraldOverload, isSuccess } from '../../../shared/domain/retry/delivery';
import { destinationSpecSchema } from '../../../shared/domain/destinations/destination';
import { HeraldEvent } from '../../../shared/domain/events/event';
import { policySpecSchema, resolvePolicy } from '../../../shared/domain/retry/policy';
import { DeliveryPolicy } from '../../../shared/domain/retry/delivery-policy';
import { ADOBE_CONFIGURABLE, EVENT_PLATFORM, EVENTARC } from '../../../shared/domain/retry/policy-presets';
import { decide, Decision, NO_HISTORY } from '../../../shared/domain/retry/retry-decision';
import { rateOutcome } from '../../../shared/domain/stats/success-rate';
import { grpcLabel, PublishFailure, publishFailureOf, topicAttemptResult, topicMessage } from '../../../shared/domain/delivery/topic-destination';

/** Pub/Sub-topic destinations: the message they get, and what a publish's gRPC outcome comes to. */

const T0 = new Date('2026-11-23T14:00:00.000Z');
const outcome = (code: number | undefined, message = 'something'): AttemptResult | HeraldOverload =>
  topicAttemptResult({ failure: code === undefined ? { message } : { code, message } }, 12, 5000);
/** A failure the destination answered for (never Pub/Sub's own overload). */
const failed = (code: number | undefined, message = 'something'): AttemptResult => {
  const r = outcome(code, message);
  if (r.kind === 'herald-overload') throw new Error(`code ${String(code)} is overload, not an attempt`);
  return r;
};
const attemptOf = (r: AttemptResult | HeraldOverload): AttemptResult => {
  if (r.kind === 'herald-overload') throw new Error('overload, not an attempt');
  return r;
};
const first = (policy: DeliveryPolicy, result: AttemptResult): Decision => decide(policy, NO_HISTORY, result, T0, T0);

const EVENT: HeraldEvent = {
  attributes: {
    specversion: '1.0',
    id: 'ev-1',
    source: '/shop',
    type: 'com.example.order.created',
    time: '2026-11-23T13:59:00.000Z',
    datacontenttype: 'application/json',
    subject: 'orders/42',
    tenant: 'acme',
  },
  data: Buffer.from('{"orderId":42}'),
};

describe('topicMessage: the CloudEvents Pub/Sub binding', () => {
  it('puts every context attribute in ce-*, datacontenttype in content-type, the data unchanged, and herald-delivery-id', () => {
    const message = topicMessage(EVENT, 'audit.KEY');
    expect(message.attributes).toEqual({
      'ce-specversion': '1.0',
      'ce-id': 'ev-1',
      'ce-source': '/shop',
      'ce-type': 'com.example.order.created',
      'ce-time': '2026-11-23T13:59:00.000Z',
      'ce-subject': 'orders/42',
      'ce-tenant': 'acme',
      'content-type': 'application/json',
      'herald-delivery-id': 'audit.KEY',
    });
    expect(message.data.equals(EVENT.data)).toBe(true);
  });

  it('decodes back to the same event, which the cloudevents SDK accepts', () => {
    const binary = { ...EVENT, data: Buffer.from([0xff, 0x00, 0xfe]), attributes: { ...EVENT.attributes, datacontenttype: 'application/octet-stream' } };
    const decoded = fromPubSubMessage(topicMessage(binary, 'audit.KEY'), new Date());
    expect(decoded.ok).toBe(true);
    if (!decoded.ok) return;
    expect(decoded.value.attributes).toEqual(binary.attributes);
    expect(decoded.value.data.equals(binary.data)).toBe(true);
    const ce = new CloudEvent({ ...decoded.value.attributes, data: decoded.value.data }, true);
    expect(ce).toMatchObject({ id: 'ev-1', source: '/shop', type: 'com.example.order.created', specversion: '1.0', tenant: 'acme' });
  });
});

describe('topicAttemptResult: a publish outcome as an attempt', () => {
  it('a message id is a success', () => {
    const r = topicAttemptResult({ messageId: '42' }, 7, 5000);
    expect(r).toEqual({ kind: 'published', durationMs: 7, messageId: '42' });
    expect(isSuccess(attemptOf(r))).toBe(true);
  });

  it('7 PERMISSION_DENIED and 5 NOT_FOUND are topic refusals, without repeating the status in the text', () => {
    expect(failed(7, '7 PERMISSION_DENIED: User not authorized to perform this action.')).toEqual({
      kind: 'topic',
      durationMs: 12,
      problem: 'permission-denied',
      error: '7 PERMISSION_DENIED: User not authorized to perform this action.',
    });
    expect(failed(5, '5 NOT_FOUND: Resource not found (resource=t).')).toEqual({ kind: 'topic', durationMs: 12, problem: 'not-found', error: '5 NOT_FOUND: Resource not found (resource=t).' });
  });

  it('no answer within the attempt timeout is a timeout', () => {
    expect(topicAttemptResult({ timedOut: true }, 5003, 5000)).toEqual({ kind: 'timeout', durationMs: 5003, timeoutMs: 5000 });
  });

  it.each([
    [4, 'Total timeout of API google.pubsub.v1.Publisher exceeded 5000 milliseconds', 'Pub/Sub could not take the publish: 4 DEADLINE_EXCEEDED: Total timeout of API google.pubsub.v1.Publisher exceeded 5000 milliseconds'],
    [14, '14 UNAVAILABLE: Connection dropped', 'Pub/Sub could not take the publish: 14 UNAVAILABLE: Connection dropped'],
    [8, 'quota exceeded', 'Pub/Sub could not take the publish: 8 RESOURCE_EXHAUSTED: quota exceeded'],
  ])('%s is overload of Pub/Sub, not an attempt of the destination', (code, message, error) => {
    expect(outcome(code, message)).toEqual({ kind: 'herald-overload', durationMs: 12, error });
  });

  it.each([
    [16, 'bad credentials', 'Pub/Sub publish failed: 16 UNAUTHENTICATED: bad credentials'],
    [13, 'oops', 'Pub/Sub publish failed: 13 INTERNAL: oops'],
    [undefined, 'client closed', 'Pub/Sub publish failed: no gRPC status: client closed'],
  ])('any other failure (%s) is a network error', (code, message, error) => {
    expect(failed(code, message)).toEqual({ kind: 'network', durationMs: 12, error });
  });

  it('long or multi-line error texts are cut to one bounded line', () => {
    const r = failed(13, `first\nsecond ${'x'.repeat(1000)}`);
    expect(r.kind === 'network' && r.error.length).toBeLessThanOrEqual(400);
    expect(r.kind === 'network' && r.error).not.toContain('\n');
  });
});

describe('publishFailureOf: whatever the client threw', () => {
  it.each<[unknown, PublishFailure]>([
    [Object.assign(new Error('5 NOT_FOUND: Resource not found'), { code: 5 }), { code: 5, message: '5 NOT_FOUND: Resource not found' }],
    [new Error('no code'), { message: 'no code' }],
    ['a string', { message: 'a string' }],
    [{ code: 'ENOTFOUND', message: 'getaddrinfo' }, { message: '[object Object]' }],
    [undefined, { message: 'undefined' }],
  ])('%p', (thrown, expected) => {
    expect(publishFailureOf(thrown)).toEqual(expected);
  });

  it('labels codes by name', () => {
    expect(grpcLabel(7)).toBe('7 PERMISSION_DENIED');
    expect(grpcLabel(99)).toBe('99 UNKNOWN');
    expect(grpcLabel(undefined)).toBe('no gRPC status');
  });
});

describe('gRPC status → attempt → decision', () => {
  it('event-platform: PERMISSION_DENIED and NOT_FOUND suspend the destination at once (criteria)', () => {
    expect(first(EVENT_PLATFORM, failed(7))).toMatchObject({ kind: 'suspend', cause: 'criteria', reason: expect.stringContaining('Herald is not allowed to publish to the topic') });
    expect(first(EVENT_PLATFORM, failed(5))).toMatchObject({ kind: 'suspend', cause: 'criteria', reason: expect.stringContaining('the topic does not exist') });
  });

  it('event-platform: other failures are retried like network errors and timeouts; a publish is delivered', () => {
    expect(first(EVENT_PLATFORM, failed(13))).toMatchObject({ kind: 'retry', retry: 1, delayMs: 5 * 60_000 });
    expect(first(EVENT_PLATFORM, attemptOf(topicAttemptResult({ timedOut: true }, 5001, 5000)))).toMatchObject({ kind: 'retry', reason: expect.stringMatching(/^timeout after 5000 ms/) });
    expect(first(EVENT_PLATFORM, attemptOf(topicAttemptResult({ messageId: '1' }, 3, 5000)))).toEqual({ kind: 'delivered' });
  });

  it('without suspendOnTopicRefusal a missing topic is a failure, retried where network errors are', () => {
    expect(first(EVENTARC, failed(5))).toMatchObject({ kind: 'retry' });
    expect(first(ADOBE_CONFIGURABLE, failed(7))).toMatchObject({ kind: 'retry' });
    const noNetworkRetries = resolvePolicy(policySpecSchema.parse({ retryOn: { statuses: ['5xx'], networkErrors: false }, backoff: { kind: 'immediate' }, maxAttempts: 3 }));
    expect(first(noNetworkRetries, failed(5))).toMatchObject({ kind: 'dead', cause: 'not-retried', reason: 'Pub/Sub not-found is not retried under custom' });
    expect(first(noNetworkRetries, failed(13))).toMatchObject({ kind: 'dead', cause: 'not-retried' });
  });

  it('counts: a publish succeeds, every failure fails the success rate', () => {
    expect(rateOutcome(attemptOf(topicAttemptResult({ messageId: '1' }, 3, 5000)), 0, 3_600_000)).toBe('success');
    for (const code of [5, 7, 13, 16]) expect(rateOutcome(failed(code), 0, 3_600_000)).toBe('failure');
  });

  it('the last error says what Pub/Sub answered', () => {
    expect(describeFailure(failed(5, 'Resource not found (resource=t).'), T0)).toEqual({
      at: T0.toISOString(),
      error: 'Pub/Sub publish refused (not-found): 5 NOT_FOUND: Resource not found (resource=t).',
    });
  });
});

describe('registering a topic destination', () => {
  it('takes a topic in any project, exactly one of url and topic, and no reserved name', () => {
    expect(destinationSpecSchema.safeParse({ topic: 'projects/other-project/topics/audit' }).success).toBe(true);
    expect(destinationSpecSchema.safeParse({ topic: 'projects/other-project/topics/audit', url: 'https://x.example.com' }).success).toBe(false);
    expect(destinationSpecSchema.safeParse({ topic: 'audit' }).success).toBe(false);
    const goog = destinationSpecSchema.safeParse({ topic: 'projects/other-project/topics/google-things' });
    expect(goog.success).toBe(false);
    expect(JSON.stringify(goog.error?.issues)).toContain('goog');
  });
});
