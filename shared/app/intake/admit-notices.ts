import { HeraldEvent } from '../../domain/events/event';
import { Admission, receiversOf } from '../../domain/operational/operational-events';
import { admitEvents, IngestDeps } from './ingest';

/**
 * Herald's own events (app/operational) through ingest's core, for one account, when a
 * destination of it would receive them (receiversOf): an account nobody would tell gets nothing
 * written, no journal entry, nothing kept (ingest journals every event it accepts, routed or not).
 */
export async function admitNotices(deps: IngestDeps & { account: string }, events: HeraldEvent[]): Promise<Admission> {
  const { account } = deps;
  const routed = await deps.directory.withAccounts([account], (matching) => events.filter((e) => receiversOf(e, matching(e.attributes.type, account)).length > 0));
  if (routed.length === 0) return { kind: 'unrouted' };
  const result = await admitEvents(deps, routed);
  return result.kind === 'accepted' ? { kind: result.kind } : { kind: result.kind, error: result.body.error };
}
