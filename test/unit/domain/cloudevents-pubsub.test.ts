import { malformedAttributes } from '../../../shared/domain/events/cloudevents-pubsub';

describe('malformedAttributes', () => {
  test('names each attribute whose value or name holds a lone surrogate', () => {
    const attributes = { 'ce-id': 'a\ud800', 'herald-intake': '\udc00', 'ce-type': 'ok.😀', ['x\ud83d']: 'v' };
    expect(malformedAttributes({ data: Buffer.alloc(0), attributes })).toEqual([
      { path: 'attributes.ce-id', message: expect.stringMatching(/^the value holds a lone UTF-16 surrogate/) as string },
      { path: 'attributes.herald-intake', message: expect.stringMatching(/^the value/) as string },
      { path: 'attributes', message: expect.stringMatching(/^an attribute name holds/) as string },
    ]);
  });

  test('none for well-formed attributes', () => {
    expect(malformedAttributes({ data: Buffer.from([0xed, 0xa0, 0x80]), attributes: { 'ce-id': '\ud83d\ude00', a: '' } })).toEqual([]);
  });
});
