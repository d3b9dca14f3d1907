import { z } from 'zod';
import { structuredEvent } from '../../domain/events/cloudevents-http';
import { Destination } from '../../domain/destinations/destination';
import { issuesFromZod } from '../../domain/events/event';
import { splitDestinationId } from '../../domain/ids';
import { destinationsOfAccount } from './destinations-admin';
import { Outcome } from '../support/outcome';
import { LIST_ANSWER_MAX_BYTES, rowBytes } from './answer-budget';
import { DeliveriesDeps, deliveryLimitSchema, deliveryViewOf, DeliveryView } from './deliveries-admin';
import { DeliveryStatus, isDeliveryId } from '../../domain/retry/delivery';
import { transition } from '../../domain/retry/delivery-state';
import { redeliverAll, SuspensionDeps } from '../delivery/suspend-and-reactivate';

/**
 * Seed 003's retrieval of queued events: an account's QUEUED (or DEAD) deliveries across
 * its destinations, narrowed to one receiver URL, each with the event itself, so the
 * customer can fetch what its endpoint missed while it was down, and send it all again.
 */

const STATUSES = { queued: 'QUEUED', dead: 'DEAD' } as const;
const STATUS_MESSAGE = 'status must be "queued" or "dead" (any case)';
const CURSOR_MESSAGE = 'cursor must be the nextCursor of the previous page, unchanged';
/** Deliveries read per store query while a page fills (each may hold a 256 KiB event). */
const READ_AT_ONCE = 25;

const statusSchema = z
  .string({ error: `${STATUS_MESSAGE}, given once` })
  .transform((s) => s.trim().toLowerCase())
  .pipe(z.enum(['queued', 'dead'], { error: STATUS_MESSAGE }));

/** Compared as `new URL` writes it, so `HTTPS://Host:443/x` and `https://host/x` are the same receiver. */
const urlSchema = z
  .string({ error: 'url must be given once' })
  .transform((u, ctx) => {
    try {
      return new URL(u).href;
    } catch {
      ctx.addIssue({ code: 'custom', message: 'url must be an absolute URL, as the destination was registered with' });
      return z.NEVER;
    }
  });

const cursorSchema = z
  .string({ error: CURSOR_MESSAGE })
  .max(2048, CURSOR_MESSAGE)
  .transform((c, ctx) => {
    const parsed = z.object({ d: z.string().min(1), c: z.string().optional() }).safeParse(safeJson(Buffer.from(c, 'base64url').toString('utf8')));
    if (!parsed.success) {
      ctx.addIssue({ code: 'custom', message: CURSOR_MESSAGE });
      return z.NEVER;
    }
    return parsed.data;
  });

export const accountDeliveriesQuerySchema = z.strictObject(
  {
    status: statusSchema.default('queued'),
    url: urlSchema.optional(),
    limit: deliveryLimitSchema,
    cursor: cursorSchema.optional(),
  },
  { error: (issue) => (issue.code === 'unrecognized_keys' ? `unknown query parameter ${issue.keys.join(', ')}; use status, url, limit, cursor` : undefined) },
);

/** The most deliveries one redelivery by id may name. */
export const REDELIVER_IDS_MAX = 100;
const IDS_MESSAGE = `ids must list 1 to ${REDELIVER_IDS_MAX} delivery ids`;
const BODY_SHAPE = '{"status"?: "queued" | "dead", "url"?} or {"ids": ["<delivery id>", …]}';

const idsSchema = z
  .array(
    z
      .string({ error: 'a delivery id must be a string' })
      .refine(isDeliveryId, 'not a delivery id: <destination id>.<event key>, as GET /admin/deliveries lists them'),
    { error: `ids must be an array of delivery ids (1 to ${REDELIVER_IDS_MAX})` },
  )
  .min(1, IDS_MESSAGE)
  .max(REDELIVER_IDS_MAX, IDS_MESSAGE)
  .superRefine((ids, ctx) => {
    ids.forEach((id, i) => {
      const first = ids.indexOf(id);
      if (first < i) ctx.addIssue({ code: 'custom', path: [i], message: `the same delivery as ids[${first}]: name each once` });
    });
  })
  .describe('Only these deliveries (ids as GET /admin/deliveries lists them, each once), not with status or url: each QUEUED or DEAD one becomes PENDING; the others are reported and left alone');

/**
 * `{"status"?, "url"?}` (every QUEUED or DEAD one, to one receiver URL if given) or `{"ids"}`
 * (those deliveries alone): the two ways exclude each other. status defaults to queued.
 */
export const accountRedeliverSchema = z
  .strictObject(
    { status: statusSchema.optional(), url: urlSchema.optional(), ids: idsSchema.optional() },
    {
      error: (issue) =>
        issue.code === 'unrecognized_keys' ? `unknown field${issue.keys.length === 1 ? '' : 's'} ${issue.keys.join(', ')}: the body is ${BODY_SHAPE}` : `the body must be a JSON object ${BODY_SHAPE}`,
    },
  )
  .superRefine((b, ctx) => {
    if (b.ids === undefined) return;
    for (const field of ['status', 'url'] as const) {
      if (b[field] !== undefined) ctx.addIssue({ code: 'custom', path: [field], message: `${field} cannot be given with ids: ids redelivers the deliveries it names (only QUEUED or DEAD ones are sent again); leave ${field} out, or ids` });
    }
  })
  .default({});

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** A queued delivery as docs/accounts.md describes it: the record, and the event (id, attributes, payload) in the CloudEvents JSON format. */
export type QueuedDeliveryView = DeliveryView & { event?: Record<string, unknown> };

/** The account's webhook destinations (to `url` when given), by id: the order pages follow. */
async function destinationsOf(deps: Pick<DeliveriesDeps, 'destinations'>, account: string, url: string | undefined): Promise<Destination[]> {
  return (await destinationsOfAccount(deps.destinations, account))
    .filter((d) => url === undefined || (d.url !== undefined && new URL(d.url).href === url))
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/**
 * `GET /admin/accounts/{id}/deliveries?status=queued&url=…`: a page across the account's
 * destinations, destination by destination, of at most `limit` rows and LIST_ANSWER_MAX_BYTES
 * (answer-budget.ts), its cursor right after its last row.
 */
export async function listAccountDeliveries(
  deps: DeliveriesDeps,
  account: string,
  query: Record<string, unknown>,
): Promise<Outcome<{ deliveries: QueuedDeliveryView[]; nextCursor?: string }>> {
  const parsed = accountDeliveriesQuerySchema.safeParse(query);
  if (!parsed.success) return { kind: 'invalid', body: { error: 'invalid deliveries query', issues: issuesFromZod(parsed.error) } };
  const { status, url, limit, cursor } = parsed.data;
  const destinations = await destinationsOf(deps, account, url);
  let at = cursor ? destinations.findIndex((d) => d.id >= cursor.d) : 0;
  let inner = cursor && destinations[at]?.id === cursor.d ? cursor.c : undefined;
  const deliveries: QueuedDeliveryView[] = [];
  let bytes = 0;
  let full = false;
  while (at >= 0 && at < destinations.length && deliveries.length < limit && !full) {
    const destination = destinations[at]!;
    // Read a few at a time: rows past the answer's budget are not read at all.
    const want = Math.min(limit - deliveries.length, READ_AT_ONCE);
    const page = await deps.deliveries.list(destination.id, { status: STATUSES[status], limit: want, ...(inner ? { cursor: inner } : {}) });
    for (const r of page.deliveries) {
      const view = { ...deliveryViewOf(r), ...(r.event ? { event: structuredEvent(r.event) } : {}) };
      const size = rowBytes(view);
      if (deliveries.length > 0 && bytes + size > LIST_ANSWER_MAX_BYTES) {
        full = true;
        break;
      }
      deliveries.push(view);
      bytes += size;
      // The store's cursor is the last id of a page: the next page starts right after this row.
      inner = r.id;
    }
    if (full) break;
    if (page.nextCursor !== undefined) inner = page.nextCursor;
    else {
      at++;
      inner = undefined;
    }
  }
  const next = at >= 0 && at < destinations.length ? Buffer.from(JSON.stringify({ d: destinations[at]!.id, ...(inner ? { c: inner } : {}) })).toString('base64url') : undefined;
  return { kind: 'ok', body: { deliveries, ...(next !== undefined ? { nextCursor: next } : {}) } };
}

type RedeliverDeps = Pick<SuspensionDeps, 'destinations' | 'deliveries' | 'clock' | 'log'>;

type AccountRedelivered = { redelivered: number; status: 'QUEUED' | 'DEAD'; destinations: { id: string; redelivered: number }[]; suspended: string[] };

/** What became of one id of a redelivery by id. */
export type RedeliveredId =
  /** PENDING again, due now: the retry pump sends it. */
  | { id: string; outcome: 'redelivered'; from: 'QUEUED' | 'DEAD'; status: 'PENDING' }
  /** Not QUEUED or DEAD (delivered, pending, in flight…): left as it is. */
  | { id: string; outcome: 'skipped'; status: DeliveryStatus }
  /** Its destination is suspended: left as it is (QUEUED ones go when it is reactivated). */
  | { id: string; outcome: 'suspended'; status: DeliveryStatus; destination: string }
  /** No such delivery in the caller's account, of a destination the caller sees. */
  | { id: string; outcome: 'not-found' };

export type RedeliveredByIds = { redelivered: number; results: RedeliveredId[]; suspended: string[] };

/**
 * The deliveries named, one by one: those of the account's destinations the caller sees, and
 * of those only the QUEUED or DEAD ones, start over (PENDING, due now, a fresh retry budget:
 * the same transition as every redelivery; the retry pump sends them). A suspended
 * destination's are left alone and it is named. Never touches another account's.
 */
async function redeliverByIds(deps: RedeliverDeps, account: string, ids: readonly string[], sees: (destinationId: string) => boolean): Promise<RedeliveredByIds> {
  const destinations = new Map<string, Promise<Destination | undefined>>();
  const destinationOf = (internal: string) => {
    let found = destinations.get(internal);
    if (!found) destinations.set(internal, (found = deps.destinations.get(internal)));
    return found;
  };
  const one = async (id: string): Promise<RedeliveredId> => {
    const internal = id.slice(0, id.indexOf('.'));
    const own = splitDestinationId(internal);
    if (own.account !== account || !sees(own.id)) return { id, outcome: 'not-found' };
    const destination = await destinationOf(internal);
    if (!destination) return { id, outcome: 'not-found' };
    if (destination.status === 'suspended') {
      const current = await deps.deliveries.get(id);
      return current ? { id, outcome: 'suspended', status: current.status, destination: own.id } : { id, outcome: 'not-found' };
    }
    let seen: DeliveryStatus | undefined;
    const now = deps.clock.now();
    const written = await deps.deliveries.update(id, (current) => {
      seen = current?.status;
      if (current?.status !== 'QUEUED' && current?.status !== 'DEAD') return undefined;
      const next = transition(current, { type: 'redeliver', now });
      return next.ok ? next.state : undefined;
    });
    if (written) return { id, outcome: 'redelivered', from: seen as 'QUEUED' | 'DEAD', status: 'PENDING' };
    return seen === undefined ? { id, outcome: 'not-found' } : { id, outcome: 'skipped', status: seen };
  };
  const results = await Promise.all(ids.map(one));
  const redelivered = results.filter((r) => r.outcome === 'redelivered').length;
  const suspended = [...new Set(results.flatMap((r) => (r.outcome === 'suspended' ? [r.destination] : [])))];
  if (redelivered > 0) deps.log.info(`${redelivered} deliveries redelivered by id`, { account, count: redelivered, ids: results.filter((r) => r.outcome === 'redelivered').map((r) => r.id) });
  return { redelivered, results, suspended };
}

/**
 * `POST /admin/accounts/{id}/deliveries/redeliver` `{"status"?, "url"?}`: those deliveries start
 * over, or `{"ids"}`: those named (redeliverByIds). A suspended destination's are left QUEUED
 * and named: reactivating it sends them.
 */
export async function postAccountRedeliver(
  deps: RedeliverDeps,
  account: string,
  body: unknown,
  sees: (destinationId: string) => boolean = () => true,
): Promise<Outcome<AccountRedelivered | RedeliveredByIds>> {
  const parsed = accountRedeliverSchema.safeParse(body);
  if (!parsed.success) return { kind: 'invalid', body: { error: 'invalid redeliver request', issues: issuesFromZod(parsed.error) } };
  if (parsed.data.ids !== undefined) return { kind: 'accepted', body: await redeliverByIds(deps, account, parsed.data.ids, sees) };
  const status = STATUSES[parsed.data.status ?? 'queued'];
  const destinations = await destinationsOf(deps, account, parsed.data.url);
  const suspended = destinations.filter((d) => d.status === 'suspended').map((d) => splitDestinationId(d.id).id);
  const counts: { id: string; redelivered: number }[] = [];
  for (const d of destinations.filter((d) => d.status !== 'suspended')) {
    counts.push({ id: splitDestinationId(d.id).id, redelivered: await redeliverAll(deps, d.id, status) });
  }
  return { kind: 'accepted', body: { redelivered: counts.reduce((n, c) => n + c.redelivered, 0), status, destinations: counts, suspended } };
}
