import { generateKeyPairSync, sign } from 'node:crypto';
import { OAuth2Client } from 'google-auth-library';
import { CertificateFormat } from 'google-auth-library/build/src/auth/oauth2client';
import { GoogleIdTokenVerifier } from '../../shared/adapters/google-id-tokens';

/**
 * A stand-in for Google's OIDC issuer: an RSA key made here, tokens signed with it, and an
 * OAuth2Client that takes its certificates from this key instead of fetching Google's — so
 * the verification path is google-auth-library's own, with no network.
 */
export class TestIssuer {
  readonly kid = 'herald-test-key';
  private readonly keys = generateKeyPairSync('rsa', { modulusLength: 2048 });
  readonly publicPem = this.keys.publicKey.export({ type: 'spki', format: 'pem' }).toString();

  /** A verifier whose certificate fetch answers with this issuer's key. */
  verifier(): GoogleIdTokenVerifier {
    const publicPem = this.publicPem;
    const kid = this.kid;
    class LocalCerts extends OAuth2Client {
      override async getFederatedSignonCertsAsync(): ReturnType<OAuth2Client['getFederatedSignonCertsAsync']> {
        return { certs: { [kid]: publicPem }, format: CertificateFormat.PEM };
      }
    }
    return new GoogleIdTokenVerifier(new LocalCerts());
  }

  /** A Google-shaped ID token: valid for an hour from now unless the claims say otherwise. */
  token(claims: Record<string, unknown>, options: { kid?: string; key?: TestIssuer } = {}): string {
    const now = Math.floor(Date.now() / 1000);
    const header = { alg: 'RS256', kid: options.kid ?? this.kid, typ: 'JWT' };
    const payload = { iss: 'https://accounts.google.com', iat: now, exp: now + 3600, sub: '1234567890', email_verified: true, ...claims };
    const signed = `${b64(header)}.${b64(payload)}`;
    const signature = sign('RSA-SHA256', Buffer.from(signed), (options.key ?? this).keys.privateKey).toString('base64url');
    return `${signed}.${signature}`;
  }

  /** The token as Cloud Run hands it on after its own IAM check: the signature replaced. */
  stripped(claims: Record<string, unknown>): string {
    return `${this.token(claims).split('.').slice(0, 2).join('.')}.SIGNATURE_REMOVED_BY_GOOGLE`;
  }
}

function b64(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}
