import { getDelivery, listDeliveries, deliveriesQuerySchema, noDelivery } from '../../shared/app/admin/deliveries-admin';
import { getDestination, listDestinations, putDestination } from '../../shared/app/admin/destinations-admin';
import { deleteDestination, deleteDestinationQuerySchema } from '../../shared/app/admin/destination-deletion';
import { accountDeliveriesQuerySchema, accountRedeliverSchema, listAccountDeliveries, postAccountRedeliver } from '../../shared/app/admin/account-deliveries-admin';
import { getAccountStats, statsQuerySchema } from '../../shared/app/admin/stats-admin';
import { listEventTypes } from '../../shared/app/admin/event-types-admin';
import { filterTestSchema, postFilterTest } from '../../shared/app/admin/filter-test-admin';
import { postRotateAuth, postRotateSecret } from '../../shared/app/admin/secret-rotation-admin';
import { rotateCredentialsSchema } from '../../shared/domain/destinations/credential-rotation';
import { BLOCKED_KEYS_LIMIT, listBlockedKeys, postSkipKey, skipKeyBodySchema } from '../../shared/app/admin/ordered-keys-admin';
import { postReactivate, postRedeliver, postSuspend, redeliverBodySchema, suspendBodySchema } from '../../shared/app/admin/suspension-admin';
import { actorOf, seesDestination } from '../../shared/domain/access/account';
import { destinationSpecSchema } from '../../shared/domain/destinations/destination';
import { rotateSecretSchema } from '../../shared/domain/destinations/secret-rotation';
import { BAD_ID, deliveryInSight, inAccount, narrowedPut, NOT_FOUND, portalDestinations, RouteSpec } from './route';

/** Bodies PUT /admin/destinations/{id} accepts (the OpenAPI examples; a test holds them to the schema). */
const DESTINATION_EXAMPLES: unknown[] = [
  { url: 'https://hooks.example.com/herald', eventTypes: ['com.example.*'] },
  { url: 'https://hooks.example.com/big-orders', eventTypes: ['com.example.order.created'], filter: 'data.amount > 1000 && data.currency in ["EUR", "CHF"]' },
  { topic: 'projects/acme-audit/topics/audit', policy: 'eventarc', failureMode: 'queue' },
  {
    url: 'https://hooks.example.com/orders',
    policy: { retryOn: { statuses: ['5xx', 408], timeouts: true, networkErrors: true }, backoff: { kind: 'exponential', initialMs: 10000, factor: 2, capMs: 300000 }, maxAttempts: 5 },
    rate: { max: 20 },
    technicalEmail: 'oncall@example.com',
  },
  { url: 'https://hooks.example.com/ledger', eventTypes: ['com.example.ledger.*'], ordering: { by: 'key', onFailure: 'block' } },
];

/**
 * Destinations and what hangs off them, in the caller's account: written once and served
 * both as `/destinations/…` (a key's own account; `default` for the admin token) and as
 * `/accounts/{accountId}/destinations/…`.
 */
export const ACCOUNT_SCOPED: RouteSpec[] = [
  {
    method: 'GET',
    path: '/destinations',
    summary: "List the account's destinations",
    responses: { 200: 'the destinations, with status and stats' },
    run: (d) => listDestinations(d, d.account),
  },
  {
    method: 'PUT',
    path: '/destinations/{id}',
    summary: 'Create or replace a destination (201 shows its signing secret, once)',
    body: { schema: destinationSpecSchema, required: true, examples: DESTINATION_EXAMPLES },
    responses: {
      200: 'replaced; reset lists each setting the old spec had that this one left out ({setting, was}: back to its default)',
      201: 'created, with its whsec_ secret',
      ...BAD_ID,
      403: "a portal session narrowed to some destinations creating one or widening its eventTypes; a topic not on the account's allowedTopics (which only the operator sets: PATCH /admin/accounts/{accountId})",
    },
    run: (d, [id], body) => inAccount(d, id!, (iid) => narrowedPut(d, id!, iid, body(), (spec) => putDestination(d, iid, spec))),
  },
  { method: 'GET', path: '/destinations/{id}', summary: 'A destination: spec, status, suspension, stats, rate', responses: { 200: 'the destination', ...BAD_ID, ...NOT_FOUND }, run: (d, [id]) => inAccount(d, id!, (iid) => getDestination(d, iid)) },
  {
    method: 'DELETE',
    path: '/destinations/{id}',
    summary: 'Delete a destination and its lane; refused while it has deliveries to send, unless deliveries=dead makes them DEAD with dead letters',
    query: deleteDestinationQuerySchema,
    responses: {
      204: 'deleted: nothing was left to send',
      200: 'deleted with deliveries=dead: how many PENDING, IN_FLIGHT and QUEUED deliveries became DEAD (byStatus), each with its dead letter',
      ...BAD_ID,
      ...NOT_FOUND,
      409: 'it still has PENDING, IN_FLIGHT or QUEUED deliveries: how many (deliveries), and the ways out',
    },
    run: (d, [id], _body, query) => inAccount(d, id!, (iid) => deleteDestination(d, iid, query)),
  },
  {
    method: 'POST',
    path: '/destinations/{id}/reactivate',
    summary: 'Reactivate a suspended destination; its QUEUED deliveries flow again',
    responses: { 200: 'reactivated, with how many deliveries were redelivered', ...BAD_ID, ...NOT_FOUND, 409: 'not suspended' },
    run: (d, [id]) => inAccount(d, id!, (iid) => postReactivate(d, iid)),
  },
  {
    method: 'POST',
    path: '/destinations/{id}/suspend',
    summary: 'Suspend an active destination by hand: nothing is sent to it, its events are QUEUED until it is reactivated',
    body: { schema: suspendBodySchema, required: false, examples: [{}, { reason: 'receiver maintenance until 14:00 UTC' }] },
    responses: { 200: 'suspended: the destination, its suspension with cause manual and who did it (by)', ...BAD_ID, ...NOT_FOUND, 409: 'already suspended' },
    run: (d, [id], body) => inAccount(d, id!, (iid) => postSuspend(d, iid, body(true), actorOf(d.caller))),
  },
  {
    method: 'POST',
    path: '/destinations/{id}/redeliver',
    summary: 'Send QUEUED (default) or DEAD deliveries again',
    body: { schema: redeliverBodySchema, required: false, examples: [{}, { status: 'queued' }, { status: 'dead' }] },
    responses: { 202: 'those deliveries are PENDING again', ...BAD_ID, ...NOT_FOUND, 409: 'the destination is suspended: reactivate it' },
    run: (d, [id], body) => inAccount(d, id!, (iid) => postRedeliver(d, iid, body(true))),
  },
  {
    method: 'POST',
    path: '/destinations/{id}/rotate-secret',
    summary: 'Rotate the signing secret; the old one keeps signing for the grace period',
    body: { schema: rotateSecretSchema, required: false, examples: [{}, { graceSeconds: 3600 }, { secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', graceSeconds: 0 }] },
    responses: { 200: 'the destination with its new secret (shown once)', ...BAD_ID, ...NOT_FOUND, 409: 'a Pub/Sub-topic destination signs nothing' },
    run: (d, [id], body) => inAccount(d, id!, (iid) => postRotateSecret(d, iid, body(true))),
  },
  {
    method: 'POST',
    path: '/destinations/{id}/rotate-auth',
    summary: 'Replace the receiver auth, headers or client certificate; within the grace period an attempt the receiver refuses (401, 403, a refused certificate) is sent once more with the replaced ones',
    body: { schema: rotateCredentialsSchema, required: true, examples: [{ auth: { type: 'apiKey', header: 'X-Api-Key', value: 'new-key' }, graceSeconds: 3600 }, { headers: { 'X-Partner-Key': { secret: 'new-key' } }, graceSeconds: 3600 }] },
    responses: { 200: 'the destination (no credential)', ...BAD_ID, ...NOT_FOUND, 409: 'a destination without the auth, headers or tls given, or a Pub/Sub-topic destination' },
    run: (d, [id], body) => inAccount(d, id!, (iid) => postRotateAuth(d, iid, body(true))),
  },
  {
    method: 'POST',
    path: '/destinations/{id}/filter-test',
    summary: "Try a CEL filter (given, else the destination's) on a given event or on the account's latest sample of each type the destination takes; nothing is saved",
    body: { schema: filterTestSchema, required: false, examples: [{ filter: 'data.amount > 1000 && ce.siteid == "42"' }, { event: { specversion: '1.0', id: 'o-1', source: '/shop', type: 'com.example.order.created', data: { amount: 1500 } } }] },
    responses: { 200: 'filter, and results: per event its type, id, from (sample or given), pass, and error where it errs (routing drops and counts those)', 400: 'an invalid filter (its line and column) or event; a destination with no filter and none given', ...NOT_FOUND },
    run: (d, [id], body) => inAccount(d, id!, (iid) => postFilterTest(d, iid, body(true))),
  },
  {
    method: 'GET',
    path: '/destinations/{id}/ordered-keys/blocked',
    summary: `The partition keys held by their head event (DEAD or QUEUED under ordering onFailure block, or while the destination is suspended), oldest first, at most ${BLOCKED_KEYS_LIMIT}`,
    responses: { 200: 'keys: key, seq, deliveryId, eventId, status, why (block or suspended), since; none for a destination without ordering', ...BAD_ID, ...NOT_FOUND },
    run: (d, [id]) => inAccount(d, id!, (iid) => listBlockedKeys(d, iid)),
  },
  {
    method: 'POST',
    path: '/destinations/{id}/ordered-keys/skip',
    summary: "Move a held key past the event that holds it (which stays DEAD or QUEUED); the key's next event is sent",
    body: { schema: skipKeyBodySchema, required: true, examples: [{ key: 'customer-42' }] },
    responses: { 200: 'skipped: the event left behind (key, seq, deliveryId, eventId, status)', ...BAD_ID, ...NOT_FOUND, 409: 'the key is not held' },
    run: (d, [id], body) => inAccount(d, id!, (iid) => postSkipKey(d, iid, body())),
  },
  {
    method: 'GET',
    path: '/destinations/{id}/deliveries',
    summary: "A destination's deliveries, a page at a time",
    query: deliveriesQuerySchema,
    responses: { 200: 'deliveries and nextCursor', ...BAD_ID, ...NOT_FOUND },
    run: (d, [id], _body, query) => inAccount(d, id!, (iid) => listDeliveries(d, iid, query)),
  },
  {
    method: 'GET',
    path: '/deliveries',
    summary: "The account's QUEUED (default) or DEAD deliveries, to one receiver URL if given, each with its event",
    query: accountDeliveriesQuerySchema,
    responses: { 200: 'deliveries with their events, and nextCursor', 400: 'invalid query: every problem named' },
    run: (d, _params, _body, query) => listAccountDeliveries(d, d.account, query),
  },
  {
    method: 'POST',
    path: '/deliveries/redeliver',
    summary: "Send the account's QUEUED (default) or DEAD deliveries again, to one receiver URL if given, or the deliveries named in ids",
    body: { schema: accountRedeliverSchema, required: false, examples: [{}, { status: 'queued', url: 'https://events.myservice.com/receiver' }, { ids: ['acme_orders.0b6f2c1e9a4d7f3b5c8e1a2d4f6b8c0e'] }] },
    responses: { 202: 'how many are PENDING again, per destination (or, with ids, per id); suspended destinations named and left queued', 400: 'invalid body' },
    run: (d, _params, body) => postAccountRedeliver(d, d.account, body(true), (id) => seesDestination(d.caller, id)),
  },
  {
    method: 'GET',
    path: '/deliveries/{id}',
    summary: 'One delivery record',
    responses: { 200: 'the delivery', ...BAD_ID, 404: 'no such delivery' },
    run: (d, [id]) => (deliveryInSight(d.caller, id!) ? getDelivery(d, id!, d.account) : Promise.resolve(noDelivery(id!))),
  },
  {
    method: 'GET',
    path: '/stats',
    summary: "The account's attempts over the last hour or day (the console's overview), or one destination's (`destination`), from counters: never a scan",
    query: statsQuerySchema,
    responses: { 200: 'series of attempts, successes, failures and latency p50/p99; success rate; latency p50/p99 over the window; queued and dead counts', 400: 'invalid query', ...NOT_FOUND },
    run: (d, _params, _body, query) => getAccountStats(d, d.caller, d.account, query),
  },
  {
    method: 'GET',
    path: '/event-types',
    summary: "The event types the account published, each with its latest event as a sample, the destinations subscribed to it by type, and those of them that filter with their filter's counts",
    responses: { 200: 'event types, by type: type, lastSeenAt, sample (CloudEvents JSON, cut at 8 KB), destinations (by type, before any filter), filtered (destination, filter, filterPassed1h, filtered1h, filterErrors1h)' },
    // A narrowed portal session sees only the types one of its destinations takes.
    run: (d) => listEventTypes(d, d.account, portalDestinations(d.caller) !== undefined),
  },
];
