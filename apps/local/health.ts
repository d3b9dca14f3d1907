import { bearerOf, matchesDigest } from '../../shared/app/access/push-auth';

export interface HealthAnswer {
  status: 200 | 503;
  body: { status: 'ok' | 'starting' } & Record<string, unknown>;
}

/**
 * GET /healthz in local mode: `ok` once ready (503 `starting` before), which is all an
 * unauthenticated caller learns. The details (project, emulator hosts, topics, function
 * URLs, …) go only to a caller with the admin token: the emulator hosts are where a
 * destination would have to point to reach Herald's own topics.
 */
export function healthAnswer(ready: boolean, details: Record<string, unknown>, authorization: string | undefined, adminToken: Buffer | undefined): HealthAnswer {
  if (!ready) return { status: 503, body: { status: 'starting' } };
  const admin = adminToken !== undefined && matchesDigest(bearerOf(authorization), adminToken);
  return { status: 200, body: admin ? { status: 'ok', ...details } : { status: 'ok' } };
}
