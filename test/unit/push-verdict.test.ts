import { AfterError, BeforeSendError, DecideError, DeliveryStageError, failedIn, pushVerdict, RecordError, SendError } from '../../shared/app/delivery/push-verdict';

const cause = new Error('UNAVAILABLE: firestore down');

describe('pushVerdict', () => {
  test.each([
    ['before the send', new BeforeSendError(cause)],
    ['in the send', new SendError(cause)],
    ['in the decision', new DecideError(cause)],
    ['in the record', new RecordError(cause)],
    ['after the record', new AfterError(cause)],
    ['untyped', cause],
    ['not an Error', 'thrown string'],
  ])('a push failed %s is redelivered', (_, failure) => {
    expect(pushVerdict(failure)).toBe('redeliver');
  });

  test('a record that stands and owns the delivery acks the push, alone or in a bundle', () => {
    const standing = new RecordError(cause, true);
    expect(pushVerdict(standing)).toBe('ack');
    expect(pushVerdict(standing, { everyMemberFailed: false })).toBe('ack');
    expect(pushVerdict(standing, { everyMemberFailed: true })).toBe('ack');
  });

  test.each([new BeforeSendError(cause), new SendError(cause), new DecideError(cause), new RecordError(cause), new AfterError(cause), cause])(
    "a bundle's member that failed (%s) is published again alone while others did not fail",
    (failure) => {
      expect(pushVerdict(failure, { everyMemberFailed: false })).toBe('publish-again');
    },
  );

  test('a bundle whose every member failed is redelivered whole', () => {
    expect(pushVerdict(new SendError(cause), { everyMemberFailed: true })).toBe('redeliver');
    expect(pushVerdict(cause, { everyMemberFailed: true })).toBe('redeliver');
  });
});

describe('stage errors', () => {
  test('wrap their cause and keep its message', () => {
    const e = new RecordError(cause);
    expect(e).toBeInstanceOf(DeliveryStageError);
    expect(e.cause).toBe(cause);
    expect(e.message).toBe(cause.message);
    expect(e.name).toBe('RecordError');
    expect([new BeforeSendError(cause), new SendError(cause), new DecideError(cause), e, new AfterError(cause)].map((s) => s.stage)).toEqual(['before-send', 'send', 'decide', 'record', 'after']);
  });

  test('failedIn types a failure by its stage, and keeps a stage typed further in', async () => {
    await expect(Promise.reject(cause).catch(failedIn(SendError))).rejects.toBeInstanceOf(SendError);
    const inner = new RecordError(cause, true);
    await expect(Promise.reject(inner).catch(failedIn(AfterError))).rejects.toBe(inner);
    await expect(Promise.resolve(3).catch(failedIn(AfterError))).resolves.toBe(3);
  });
});
