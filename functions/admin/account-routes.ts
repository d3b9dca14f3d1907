import {
  accountListQuerySchema,
  createAccount,
  createKey,
  deleteAccount,
  getAccount,
  getSettings,
  listAccounts,
  listKeys,
  revokeKey,
  setSettings,
  updateAccount,
} from '../../shared/app/admin/accounts-admin';
import { endPortalSessions, exchangePortalLink, listPortalLinks, listPortalSessions, mintPortalLink, revokePortalLink, revokePortalSession } from '../../shared/app/admin/portal-admin';
import { accountCreateSchema, accountPatchSchema, accountSettingsSchema, FAILURE_POLICY_SETTING, keyCreateSchema } from '../../shared/domain/access/account';
import { portalLinkSchema, portalSessionSchema } from '../../shared/domain/access/portal';
import { getUsage, listUsage, usageAsCsv, usageQuerySchema } from '../../shared/app/usage/usage-admin';
import { NO_ACCOUNT, RouteSpec } from './route';

/** Accounts, their settings (docs/accounts.md) and keys: the account id is in the path. */
export const ACCOUNT_ROUTES: RouteSpec[] = [
  {
    method: 'POST',
    path: '/accounts',
    summary: 'Create an account (operator only)',
    body: { schema: accountCreateSchema, required: true, examples: [{ name: 'Acme Corp' }, { id: 'acme', name: 'Acme Corp', technicalEmail: 'ops@acme.example' }] },
    responses: { 201: 'the account', 400: 'invalid body', 403: 'an account key cannot', 409: 'the id is taken, or was a deleted account\'s (never reused)' },
    run: (d, _params, body) => createAccount(d, d.caller, body()),
  },
  { method: 'GET', path: '/accounts', summary: 'List accounts, a page at a time (a key sees its own)', query: accountListQuerySchema, responses: { 200: 'accounts and nextCursor', 400: 'invalid query' }, run: (d, _params, _body, query) => listAccounts(d, d.caller, query) },
  { method: 'GET', path: '/accounts/{accountId}', summary: 'An account, with quotasInForce and allowedTopicsInForce', accountParam: true, responses: { 200: 'the account', ...NO_ACCOUNT }, run: (d, [id]) => getAccount(d, d.caller, id!) },
  {
    method: 'PATCH',
    path: '/accounts/{accountId}',
    summary: "Change an account's name, technical email, quotas, portal theme or allowed topics (operator only): allowedTopics, the topics and projects/P/topics/x-* prefixes its destinations may publish to, replaces the list (null removes it)",
    accountParam: true,
    body: { schema: accountPatchSchema, required: true, examples: [{ name: 'Acme Inc' }, { technicalEmail: null }, { allowedTopics: ['projects/acme-prod/topics/acme-*', 'projects/acme-audit/topics/audit'] }, { allowedTopics: null }] },
    responses: { 200: 'the account', 400: 'invalid body', 403: 'an account key cannot', ...NO_ACCOUNT },
    run: (d, [id], body) => updateAccount(d, d.caller, id!, body()),
  },
  { method: 'DELETE', path: '/accounts/{accountId}', summary: 'Delete an account without destinations, with everything stored under it: keys, deliveries, samples, counters, replays (operator only; its id is never reused)', accountParam: true, responses: { 204: 'deleted', 403: 'an account key cannot', ...NO_ACCOUNT, 409: 'it still has destinations, or it is default' }, run: (d, [id]) => deleteAccount(d, d.caller, id!) },
  { method: 'GET', path: '/accounts/{accountId}/settings', summary: "The account's settings", accountParam: true, responses: { 200: 'the settings; none set means retry', ...NO_ACCOUNT }, run: (d, [id]) => getSettings(d, d.caller, id!) },
  ...(['POST', 'PATCH'] as const).map(
    (method): RouteSpec => ({
      method,
      path: '/accounts/{accountId}/settings',
      summary: method === 'POST' ? 'Set the settings: what is left out returns to its default' : 'Change the settings named',
      accountParam: true,
      body: { schema: accountSettingsSchema, required: true, examples: [{ [FAILURE_POLICY_SETTING]: 'retry' }, { [FAILURE_POLICY_SETTING]: 'queue' }] },
      responses: { 200: 'the settings', 400: 'invalid body', ...NO_ACCOUNT },
      run: (d, [id], body) => setSettings(d, d.caller, id!, body(), method === 'POST' ? 'replace' : 'merge'),
    }),
  ),
  {
    method: 'POST',
    path: '/accounts/{accountId}/keys',
    summary: 'Create an account key (shown once)',
    accountParam: true,
    body: { schema: keyCreateSchema(new Date(0)), required: true, examples: [{ name: 'ci' }, { name: 'publisher', scopes: ['publish'], expiresAt: '2099-01-01T00:00:00Z' }] },
    responses: { 201: 'the key record and the key itself, this once', 400: 'invalid body', 403: 'a key granting a scope it lacks, or an expiry after its own (the scope or expiry named)', ...NO_ACCOUNT },
    run: (d, [id], body) => createKey(d, d.caller, id!, body()),
  },
  {
    method: 'GET',
    path: '/accounts/{accountId}/usage',
    summary: "The account's usage per UTC day (granularity=month: per month): events accepted and refused, operational events, deliveries, attempts by outcome, delivered, bytes sent, the modeled GCP cost (docs/usage.md); CSV with Accept: text/csv",
    accountParam: true,
    query: usageQuerySchema,
    responses: { 200: '{"account", "from", "to", "granularity", "days": [{"date", "eventsAccepted", "eventsRefused", "operationalEvents", "deliveries", "attempts", "delivered", "bytesSent", "modeledCostUsd"}]}, every day of the range a row; text/csv when asked', 400: 'invalid query: from or to not a day, to before from, more than 400 days', ...NO_ACCOUNT },
    csv: (body) => usageAsCsv(body as Parameters<typeof usageAsCsv>[0]),
    run: (d, [id], _body, query) => getUsage(d, id!, query),
  },
  {
    method: 'GET',
    path: '/usage',
    summary: "Every account's usage over a range, one row each, summed (operator only; the console's Usage page)",
    query: usageQuerySchema,
    responses: { 200: '{"from", "to", "accounts": [{"account", …the counts of a usage row}]}', 400: 'invalid query', 403: 'an account key or portal session cannot' },
    run: (d, _params, _body, query) => listUsage(d, d.caller, query),
  },
  { method: 'GET', path: '/accounts/{accountId}/keys', summary: "The account's keys (never the keys themselves)", accountParam: true, responses: { 200: 'keys', ...NO_ACCOUNT }, run: (d, [id]) => listKeys(d, d.caller, id!) },
  {
    method: 'POST',
    path: '/accounts/{accountId}/portal-links',
    summary: 'Mint a customer portal link for the account: signed, short-lived, the token in the URL fragment (docs/console.md)',
    accountParam: true,
    body: {
      schema: portalLinkSchema,
      required: true,
      examples: [{ ttlSeconds: 3600 }, { ttlSeconds: 900, readOnly: true, destinations: ['orders'], returnUrl: 'https://app.example.com/settings/webhooks' }, { ttlSeconds: 600, scopes: ['read'], maxSessions: 1 }],
    },
    responses: {
      201: 'the link ({"id", "url", "expiresAt", "scopes", "maxSessions"}); revoke it with DELETE …/portal-links/{linkId}',
      400: 'invalid body: every problem named',
      403: 'a portal session cannot; a key cannot grant a scope it lacks (the scope named)',
      503: 'neither HERALD_CONSOLE_URL nor HERALD_PUSH_BASE_URL is set: Herald does not know where its console is',
      ...NO_ACCOUNT,
    },
    run: (d, [id], body) => mintPortalLink(d, d.caller, id!, body(), d.consoleUrl),
  },
  {
    method: 'GET',
    path: '/accounts/{accountId}/portal-links',
    summary: "The account's live portal links, newest first, each with its live sessions (a portal session cannot)",
    accountParam: true,
    responses: { 200: 'links: id, mintedBy (admin or a key id), readOnly, destinations, createdAt, expiresAt, sessions', 403: 'a portal session cannot', ...NO_ACCOUNT },
    run: (d, [id]) => listPortalLinks(d, d.caller, id!),
  },
  {
    method: 'DELETE',
    path: '/accounts/{accountId}/portal-links/{linkId}',
    summary: 'Revoke a portal link and every session opened from it: refused everywhere within 5 s',
    accountParam: true,
    responses: { 204: 'revoked (also when it already was)', 403: 'a portal session cannot', 404: 'no such account or link' },
    run: (d, [id, linkId]) => revokePortalLink(d, d.caller, id!, linkId!),
  },
  {
    method: 'GET',
    path: '/accounts/{accountId}/portal-sessions',
    summary: "The account's live portal sessions, newest first, each with its link's rights (a portal session cannot)",
    accountParam: true,
    responses: { 200: 'sessions: id, linkId, mintedBy, readOnly, destinations, createdAt, expiresAt', 403: 'a portal session cannot', ...NO_ACCOUNT },
    run: (d, [id]) => listPortalSessions(d, d.caller, id!),
  },
  {
    method: 'POST',
    path: '/accounts/{accountId}/portal-sessions/revoke',
    summary: "End every portal session of the account, and every link minted so far: refused everywhere within 5 s (the operator, or a key with write)",
    accountParam: true,
    responses: { 200: 'endedAt, and how many live links and sessions it revoked', 403: 'a portal session cannot', ...NO_ACCOUNT },
    run: (d, [id]) => endPortalSessions(d, d.caller, id!),
  },
  {
    method: 'DELETE',
    path: '/accounts/{accountId}/portal-sessions/{sessionId}',
    summary: 'Revoke one portal session: refused everywhere within 5 s (its link may open another)',
    accountParam: true,
    responses: { 204: 'revoked (also when it already was)', 403: 'a portal session cannot', 404: 'no such account or session' },
    run: (d, [id, sessionId]) => revokePortalSession(d, d.caller, id!, sessionId!),
  },
  { method: 'DELETE', path: '/accounts/{accountId}/keys/{keyId}', summary: 'Revoke a key: refused everywhere within 5 s', accountParam: true, responses: { 204: 'revoked', 404: 'no such account or key' }, run: (d, [id, keyId]) => revokeKey(d, d.caller, id!, keyId!) },
];

/** The customer portal's door: a portal link exchanged for a session, with no bearer token (the link is the credential). */
export const PORTAL_ROUTES: RouteSpec[] = [
  {
    method: 'POST',
    path: '/portal/sessions',
    summary: 'Exchange a portal link token for a portal session (no Authorization header: the link is the credential)',
    public: true,
    body: { schema: portalSessionSchema, required: true, examples: [{ token: 'hpl_eyJpZCI6Ii4uLiJ9.c2lnbmF0dXJl' }] },
    responses: {
      200: 'the session: sessionToken (hps_…, a bearer token for this API), account, readOnly, scopes, destinations, expiresAt, returnUrl, theme',
      400: 'invalid body',
      401: 'the link expired, was revoked or has opened every session it may (each with returnUrl), or is not valid',
      429: 'this link, or this instance, takes no more exchanges for a while: Retry-After says how long',
    },
    run: (d, _params, body) => exchangePortalLink(d, body()),
  },
];
