import { getReplay, listReplays, noReplay, postReplay, replayListQuerySchema } from '../../shared/app/admin/replays-admin';
import { replayRequestSchema } from '../../shared/domain/replay/replay';
import { BAD_ID, portalDestinations, replayInSight, RouteSpec } from './route';

/**
 * Replays of dead letters. With an account (a key's own, or the path's) a replay sees only that
 * account's destinations; the admin token on the bare paths works across every account.
 */
export const REPLAY_ROUTES: RouteSpec[] = [
  {
    method: 'POST',
    path: '/replays',
    summary: "Replay dead letters: the account's (a key, or under /accounts/{id}), or every account's (the admin token); one replay per account at a time; others take turns",
    body: { schema: replayRequestSchema, required: true, examples: [{}, { destination: 'orders', since: '2026-11-24T00:00:00Z', eventTypes: ['com.example.*'], limit: 100 }, { destination: 'orders', dryRun: true }] },
    responses: { 202: 'queued: follow the report', ...BAD_ID, 409: "a replay of the same account (or the operator's) is under way, or the account used this id", 503: 'the replay topic refused it; nothing replayed' },
    run: async (d, _params, body) => {
      const request = body();
      const only = portalDestinations(d.caller);
      if (only !== undefined && !replayInSight(d.caller, (request ?? {}) as { destination?: string })) {
        return { kind: 'forbidden', body: { error: `this portal session sees only the destinations ${only.join(', ')}: name one of them in "destination"`, issues: [{ path: 'destination', message: `must be one of ${only.join(', ')}` }] } };
      }
      return postReplay(d, request, d.replayScope);
    },
  },
  {
    method: 'GET',
    path: '/replays',
    summary: 'Recent replays, newest first (an account sees its own)',
    query: replayListQuerySchema,
    responses: { 200: 'replay summaries', ...BAD_ID },
    run: async (d, _params, _body, query) => {
      const result = await listReplays(d, query, d.replayScope);
      return result.kind === 'ok' ? { ...result, body: { replays: result.body.replays.filter((r) => replayInSight(d.caller, r.request)) } } : result;
    },
  },
  {
    method: 'GET',
    path: '/replays/{id}',
    summary: "A replay's report",
    responses: { 200: 'the report', ...BAD_ID, 404: 'no such replay (or not yours)', 409: 'the admin token asked by id alone, and several accounts used it: ask under /admin/accounts/{id}' },
    run: async (d, [id]) => {
      const result = await getReplay(d, id!, d.replayScope);
      if (result.kind !== 'ok' || replayInSight(d.caller, result.body.request)) return result;
      return noReplay(id!);
    },
  },
];
