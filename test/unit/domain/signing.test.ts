import { createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { signatureHeaders } from '../../../shared/domain/delivery/signing';

const secret = `whsec_${Buffer.from('0123456789abcdef0123456789abcdef').toString('base64')}`;
// Now, to the second: the library refuses a timestamp more than five minutes off.
const at = new Date(Math.floor(Date.now() / 1000) * 1000);

function rawSignature(body: Buffer): string {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  return `v1,${createHmac('sha256', key).update(`msg_1.${at.getTime() / 1000}.`).update(body).digest('base64')}`;
}

describe('signatureHeaders', () => {
  test('a UTF-8 body: one signature, the library’s, which is also the HMAC of its bytes', () => {
    const body = Buffer.from('{"text":"héllo"}');
    const headers = signatureHeaders([secret], 'msg_1', at, body);
    expect(headers['webhook-signature']!.split(' ')).toEqual([rawSignature(body)]);
    expect(() => new Webhook(secret).verify(body.toString('utf8'), headers)).not.toThrow();
  });

  test('bytes that are not UTF-8: the library’s signature over their text, and one over the bytes themselves', () => {
    const body = Buffer.from([0x7b, 0xff, 0xfe, 0x7d]);
    const signatures = signatureHeaders([secret], 'msg_1', at, body)['webhook-signature']!.split(' ');
    expect(signatures).toHaveLength(2);
    expect(signatures).toContain(rawSignature(body));
  });
});
