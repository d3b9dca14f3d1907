import { Caller } from '../../domain/access/account';
import { errorMessage } from '../../domain/error-message';
import { issuesFromZod } from '../../domain/events/event';
import { HEALTH_WINDOWS, HealthWindow, overviewQuerySchema } from '../../domain/health/health-rates';
import { Clock, Logger } from '../../ports/clock';
import { HealthReader, HealthReading } from '../../ports/health';
import { Outcome } from '../support/outcome';

/**
 * The console's Overview panel: Herald's own health over a window, from the same numbers its
 * metrics carry (docs/observability.md), for an operator without Cloud Monitoring's console.
 * The operator's only: it is the whole deployment's, never one account's.
 */
export interface HealthAdminDeps {
  health: HealthReader;
  clock: Clock;
  log: Logger;
}

export type Overview = HealthReading & { window: HealthWindow; asOf: string };

export async function readOverview(deps: HealthAdminDeps, caller: Caller, query: Record<string, unknown>): Promise<Outcome<Overview>> {
  if (caller.kind !== 'operator') return { kind: 'forbidden', body: { error: "Herald's own health is for the operator (the admin token) only; an account key or portal session cannot read it" } };
  const parsed = overviewQuerySchema.safeParse(query);
  if (!parsed.success) return { kind: 'invalid', body: { error: 'invalid query', issues: issuesFromZod(parsed.error) } };
  const now = deps.clock.now();
  try {
    const reading = await deps.health.read(HEALTH_WINDOWS[parsed.data.window], now);
    return { kind: 'ok', body: { window: parsed.data.window, ...reading, asOf: now.toISOString() } };
  } catch (e) {
    deps.log.warn('overview: reading Herald health failed', { error: errorMessage(e) });
    return { kind: 'unavailable', body: { error: `could not read Herald's health just now (${errorMessage(e)}); try again shortly` } };
  }
}
