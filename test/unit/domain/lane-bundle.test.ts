import { BUNDLE_LIMITS, bundleBody, bundlesOf, readBundleBody } from '../../../shared/domain/intake/lane-bundle';
import { PubSubMessage } from '../../../shared/domain/events/cloudevents-pubsub';

const message = (id: string, data: Buffer = Buffer.from(`{"id":"${id}"}`)): PubSubMessage => ({ data, attributes: { 'ce-id': id, 'herald-destination': 'orders' } });

test('a body gives back its members, attributes and data byte for byte, binary data included', () => {
  const members = [message('a'), message('b', Buffer.from([0, 10, 255, 13, 10])), message('c', Buffer.alloc(0))];
  const read = readBundleBody(bundleBody(members), 3);
  expect(read).toEqual({ ok: true, members });
});

test('messages are split into bundles within the limits, in order', () => {
  const many = Array.from({ length: BUNDLE_LIMITS.members + 1 }, (_, i) => message(String(i)));
  expect(bundlesOf(many).map((b) => b.length)).toEqual([BUNDLE_LIMITS.members, 1]);
  const big = Buffer.alloc(BUNDLE_LIMITS.bytes / 2);
  expect(bundlesOf([message('a', big), message('b', big), message('c')]).map((b) => b.map((m) => m.attributes['ce-id']))).toEqual([['a'], ['b', 'c']]);
});

test('a body that is not what a bundle holds is refused with what is wrong', () => {
  const body = bundleBody([message('a'), message('b')]);
  expect(readBundleBody(body, 3)).toEqual({ ok: false, issues: [{ path: 'attributes', message: 'the bundle says it holds 3 members; its body lists 2' }] });
  expect(readBundleBody(body.subarray(0, body.length - 1), 2)).toMatchObject({ ok: false, issues: [{ path: 'data', message: expect.stringContaining('should be') }] });
  expect(readBundleBody(Buffer.from('{"m":[]}\n'), 0)).toMatchObject({ ok: false, issues: [{ message: 'a bundle holds one member at least' }] });
  expect(readBundleBody(Buffer.from('{"m":[{"a":{},"n":-1}]}\n'), 1)).toMatchObject({ ok: false, issues: [{ path: 'data.m.0.n' }] });
  expect(readBundleBody(Buffer.from('no header'), 1)).toMatchObject({ ok: false, issues: [{ message: expect.stringContaining('line of JSON') }] });
  expect(readBundleBody(Buffer.from('{oops\n'), 1)).toMatchObject({ ok: false, issues: [{ message: "a bundle's first line is not JSON" }] });
});
