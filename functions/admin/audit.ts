import { actorOf, Caller } from '../../shared/domain/access/account';
import { Logger } from '../../shared/ports/clock';
import { Route } from './route';

/** What an admin request changed, as the audit trail records it. */
export interface Change {
  route: Pick<Route, 'method' | 'path' | 'public'>;
  caller: Caller;
  account: string;
  /** The path's ids. */
  ids: string[];
  /** The body's top-level fields: never their values, which may be secrets. */
  fields: string[];
  status: number;
}

/**
 * The audit trail: every change, who made it, in which account, and which fields it set.
 * Reads, refusals and public routes (the portal exchange logs the session it opens) are not changes.
 */
export function audit(log: Logger, change: Change): void {
  if (change.route.method === 'GET' || change.status >= 400 || change.route.public) return;
  const { route, caller, account, ids, fields, status } = change;
  log.info(`audit: ${route.method} /admin${route.path}`, { audit: true, actor: actorOf(caller), account, route: `${route.method} ${route.path}`, ids, fields, status });
}
