import { OAuth2Client } from 'google-auth-library';
import { IdTokenVerifier } from '../ports/http';

/**
 * Google's OIDC ID tokens, verified with google-auth-library: the RS256 signature against
 * Google's published certificates (fetched once and cached as their Cache-Control allows),
 * the issuer, iat/exp with five minutes of clock skew, and the audience. The caller checks
 * who the token names (email, email_verified). The library's errors quote the token: never
 * log them as they are (shared/domain/access/oidc-claims.ts verificationFailure).
 */
export class GoogleIdTokenVerifier implements IdTokenVerifier {
  constructor(private readonly client: OAuth2Client = new OAuth2Client()) {}

  async verify(idToken: string, audience: string): Promise<Record<string, unknown>> {
    const ticket = await this.client.verifyIdToken({ idToken, audience });
    const payload = ticket.getPayload();
    if (!payload) throw new Error('the token has no payload');
    return { ...payload };
  }
}
