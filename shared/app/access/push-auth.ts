import { createHash, timingSafeEqual } from 'node:crypto';
import { PushAuthMode } from '../../config-schema';
import { checkCallerClaims, SIGNATURE_REMOVED, unverifiedClaims, verificationFailure } from '../../domain/access/oidc-claims';
import { FunctionName } from '../../topology';
import { Clock } from '../../ports/clock';
import { IdTokenVerifier } from '../../ports/http';
import { errorMessage } from '../../domain/error-message';

/** The functions only Herald's plumbing calls, and which identities call each on GCP (the pump: its schedule, and a batcher's wake-up pushed). */
const CALLER: Partial<Record<FunctionName, readonly ('push' | 'scheduler')[]>> = {
  route: ['push'],
  deliver: ['push'],
  replay: ['push'],
  pump: ['scheduler', 'push'],
  'suspension-check': ['scheduler'],
};

export interface PushAuthSettings {
  /** undefined: nothing configured, every request is refused. */
  mode: PushAuthMode | undefined;
  pushToken?: string;
  pushServiceAccount?: string;
  /** Default: the push service account. */
  schedulerServiceAccount?: string;
  /** Audiences are `${baseUrl}/${function}`: the URL Pub/Sub pushes to and Cloud Scheduler calls. */
  baseUrl?: string;
}

/** What a push or scheduler request presented. */
export interface PresentedCredentials {
  /** The Authorization header. */
  authorization?: string;
  /** The `token` query parameter (local mode's push URLs carry it). */
  queryToken?: string;
}

export type PushAuthVerdict = { ok: true; caller: string } | { ok: false; kind: 'unauthenticated' | 'unavailable'; message: string };

/** SHA-256 first: timingSafeEqual then compares equal lengths whatever was sent. */
export function digestOf(secret: string): Buffer {
  return createHash('sha256').update(secret, 'utf8').digest();
}

/** Constant-time comparison of a presented secret with the digest of the expected one. */
export function matchesDigest(presented: string | undefined, expected: Buffer): boolean {
  return presented !== undefined && timingSafeEqual(digestOf(presented), expected);
}

export function bearerOf(authorization: string | undefined): string | undefined {
  return authorization?.match(/^Bearer\s+(\S+)\s*$/i)?.[1];
}

/**
 * Authenticates the internal endpoints. Locally the emulator's pushes carry no identity, so a
 * shared token in the push URL stands in for one; on GCP each request carries a Google OIDC
 * token whose audience is the function's URL and whose email is the push (route, deliver,
 * replay) or the scheduler (pump, suspension-check) service account.
 */
export class PushAuthenticator {
  private readonly pushTokenDigest?: Buffer;

  constructor(
    private readonly settings: PushAuthSettings,
    private readonly verifier: IdTokenVerifier,
    private readonly clock: Clock,
  ) {
    if (settings.pushToken !== undefined) this.pushTokenDigest = digestOf(settings.pushToken);
  }

  get mode(): PushAuthMode | undefined {
    return this.settings.mode;
  }

  async check(fn: FunctionName, presented: PresentedCredentials): Promise<PushAuthVerdict> {
    const { mode } = this.settings;
    if (mode === undefined) {
      return { ok: false, kind: 'unavailable', message: 'push authentication is not configured: set HERALD_PUSH_SERVICE_ACCOUNT (GCP, OIDC) or HERALD_PUSH_TOKEN (local mode)' };
    }
    if (mode === 'token') {
      if (this.pushTokenDigest && matchesDigest(presented.queryToken, this.pushTokenDigest)) return { ok: true, caller: 'push-token' };
      return { ok: false, kind: 'unauthenticated', message: 'internal requests must carry the push token in ?token= (the subscription URL holds it)' };
    }
    const token = bearerOf(presented.authorization);
    if (token === undefined) return { ok: false, kind: 'unauthenticated', message: `${fn} is called by Pub/Sub or Cloud Scheduler only: send a Google OIDC token in Authorization: Bearer <token>` };
    const expected = this.expectedCaller(fn);
    if (token.endsWith(`.${SIGNATURE_REMOVED}`)) return this.checkStripped(fn, token, expected);
    let claims: Record<string, unknown>;
    try {
      claims = await this.verifier.verify(token, expected.audience);
    } catch (e) {
      return refused(fn, verificationFailure(errorMessage(e)));
    }
    const verdict = checkCallerClaims(claims, expected, this.clock.now(), true);
    return verdict.ok ? { ok: true, caller: verdict.email } : refused(fn, verdict.reason);
  }

  /**
   * Cloud Run verified this token (signature, audience, invoker role) before the request got
   * here and removed its signature: only a function that IAM keeps private may take it.
   */
  private checkStripped(fn: FunctionName, token: string, expected: { audience: string; emails: string[] }): PushAuthVerdict {
    if (this.settings.mode !== 'oidc-behind-iam') {
      return refused(fn, 'its signature was removed by Cloud Run; a function behind IAM needs HERALD_PUSH_AUTH=oidc-behind-iam');
    }
    const claims = unverifiedClaims(token);
    if (!claims) return refused(fn, 'the bearer token is not a JWT');
    const verdict = checkCallerClaims(claims, expected, this.clock.now(), true);
    return verdict.ok ? { ok: true, caller: verdict.email } : refused(fn, verdict.reason);
  }

  private expectedCaller(fn: FunctionName): { audience: string; emails: string[] } {
    const push = this.settings.pushServiceAccount;
    const scheduler = this.settings.schedulerServiceAccount ?? push;
    const emails = (CALLER[fn] ?? ['push']).map((caller) => (caller === 'scheduler' ? scheduler : push)).filter((e): e is string => e !== undefined);
    return { audience: `${(this.settings.baseUrl ?? '').replace(/\/+$/, '')}/${fn}`, emails: [...new Set(emails)] };
  }
}

function refused(fn: FunctionName, reason: string): PushAuthVerdict {
  return { ok: false, kind: 'unauthenticated', message: `${fn} refused the request's OIDC token: ${reason}` };
}
