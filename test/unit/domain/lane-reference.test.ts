import { journalledMessage, readJournalled } from '../../../shared/domain/intake/lane-reference';

/** A batch lane message that names its events in the intake journal: written and read back, and refused when malformed. */

const ref = { destinationId: 'feed', intake: 'i-1796671840901-35d15821aeef', places: [0, 1, 7], publishedAt: '2026-12-07T20:00:00.000Z' };

test('reads back as written, a resend marked; a message that is not a reference is not read as one', () => {
  expect(readJournalled(journalledMessage(ref))).toEqual({ ok: true, value: ref });
  expect(readJournalled(journalledMessage({ ...ref, resent: true }))).toEqual({ ok: true, value: { ...ref, resent: true } });
  expect(readJournalled({ data: Buffer.from('{}'), attributes: { 'herald-destination': 'feed' } })).toBeUndefined();
});

test('a malformed reference is refused with what is wrong', () => {
  const message = journalledMessage(ref);
  const read = (data: string, attributes: Record<string, string> = message.attributes) => readJournalled({ data: Buffer.from(data), attributes });
  expect(read('not json')).toEqual({ ok: false, issues: [{ path: 'data', message: 'a reference lists its events’ places as JSON' }] });
  expect(read('[0, -1, 7]')).toMatchObject({ ok: false, issues: [{ path: 'data.1' }] });
  expect(read('[0, 1]')).toEqual({ ok: false, issues: [{ path: 'attributes.herald-journalled', message: 'says 3 events; data lists 2' }] });
  const { 'herald-intake': _, ...noIntake } = message.attributes;
  expect(read('[0, 1, 7]', noIntake)).toEqual({ ok: false, issues: [{ path: 'attributes', message: 'a reference names its destination, intake batch and publish time' }] });
});
