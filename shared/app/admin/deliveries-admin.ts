import { z } from 'zod';
import { DELIVERY_STATUSES, DeliveryRecord, isDeliveryId } from '../../domain/retry/delivery';
import { INTERNAL_DESTINATION_ID, splitDestinationId } from '../../domain/ids';
import { issuesFromZod, ValidationIssue } from '../../domain/events/event';
import { decodeLogCursor, DeliveryLogQuery, encodeLogCursor, logOrder, logPage } from '../../domain/stats/delivery-log';
import { RecentEntry } from '../../domain/delivery/recent-log';
import { DeliveryPage } from '../../ports/deliveries';
import { AdminDeps, badId, notFound } from './destinations-admin';
import { Outcome } from '../support/outcome';
import { rowsWithin } from './answer-budget';

/**
 * The operators' view of deliveries (docs/delivery-states.md): one destination's delivery log,
 * paged and filtered, and one delivery by id with its attempts' detail. Never the event's
 * bytes beyond the excerpt each attempt keeps.
 */

export type DeliveriesDeps = Pick<AdminDeps, 'destinations' | 'deliveries'> & {
  /** The head of each destination's log, kept with its counters (DeliveryLogHead, domain/delivery/recent-log.ts): the unfiltered first page without a query. */
  logHead?: LogHead;
};

export interface LogHead {
  /** The destination's newest `want` records, newest first, when the head knows them for sure (domain/delivery/recent-log.ts headOf). */
  head(destinationId: string, want: number): Promise<RecentEntry[] | undefined>;
}

/** A delivery as the admin API shows it: the record without its event (no payload, no attributes beyond id/source/type), its destination by the account's own id. */
export type DeliveryView = Omit<DeliveryRecord, 'event'> & { account: string };

export function deliveryViewOf(record: DeliveryRecord): DeliveryView {
  const { event: _event, ...view } = record;
  const { account, id } = splitDestinationId(record.destinationId);
  return { ...view, destinationId: id, account };
}

export const DELIVERY_PAGE = { defaultLimit: 50, maxLimit: 500 } as const;

const STATUS_MESSAGE = `status must be one of ${DELIVERY_STATUSES.join(', ')} (any case)`;
const LIMIT_MESSAGE = `limit must be a whole number from 1 to ${DELIVERY_PAGE.maxLimit} (default ${DELIVERY_PAGE.defaultLimit})`;
const QUERY_PARAMETERS = ['status', 'type', 'eventId', 'from', 'to', 'limit', 'cursor'] as const;

/** A page's size in a query string (the deliveries listings share it). */
export const deliveryLimitSchema = z
  .string({ error: `${LIMIT_MESSAGE}, given once` })
  .regex(/^\s*\d{1,6}\s*$/, LIMIT_MESSAGE)
  .transform(Number)
  .pipe(z.number().int().min(1, LIMIT_MESSAGE).max(DELIVERY_PAGE.maxLimit, LIMIT_MESSAGE))
  .default(DELIVERY_PAGE.defaultLimit);

const once = (name: string, what: string) => z.string({ error: `${name} must be ${what}, given once` });
const instant = (name: string, side: string) =>
  once(name, 'an ISO 8601 date-time')
    .refine((s) => z.iso.datetime({ offset: true }).safeParse(s).success, `${name} must be an ISO 8601 date-time with a time zone, e.g. 2026-11-26T09:00:00Z (${side})`)
    .transform((s) => new Date(s).toISOString());

/** The query string of GET /admin/destinations/{id}/deliveries (the delivery log). A repeated parameter arrives as an array and is refused. */
export const deliveriesQuerySchema = z
  .object({
    status: once('status', 'one status')
      .transform((s) => s.trim().toUpperCase())
      .pipe(z.enum(DELIVERY_STATUSES, { error: STATUS_MESSAGE }))
      .optional(),
    type: once('type', 'one event type').min(1, 'type must not be empty: leave it out for every type').max(256, 'type is at most 256 characters').optional(),
    eventId: once('eventId', "one event's id").min(1, 'eventId must not be empty: leave it out for every event').max(256, 'eventId is at most 256 characters').optional(),
    from: instant('from', 'published at or after it').optional(),
    to: instant('to', 'published before it').optional(),
    limit: deliveryLimitSchema,
    cursor: once('cursor', 'the nextCursor of the previous page')
      .min(1, 'cursor must not be empty: pass the nextCursor of the previous page, or leave it out for the first page')
      .max(1024, 'cursor is too long: pass the nextCursor of the previous page unchanged')
      .transform((s, ctx) => {
        const cursor = decodeLogCursor(s);
        if (!cursor) ctx.addIssue({ code: 'custom', message: 'cursor is not one this API gave: pass the nextCursor of the previous page unchanged, with the same filters' });
        return cursor ?? z.NEVER;
      })
      .optional(),
  })
  .refine((q) => q.from === undefined || q.to === undefined || q.from < q.to, { path: ['to'], message: 'to must be later than from' });

/** Every problem with a query at once: unknown parameters and bad values, each by name. */
export function parseDeliveriesQuery(query: Record<string, unknown>): { ok: true; value: DeliveryLogQuery } | { ok: false; issues: ValidationIssue[] } {
  const unknown = Object.keys(query)
    .filter((k) => !(QUERY_PARAMETERS as readonly string[]).includes(k))
    .map((k) => ({ path: k, message: `unknown query parameter; use ${QUERY_PARAMETERS.join(', ')}` }));
  const parsed = deliveriesQuerySchema.safeParse(query);
  const issues = [...unknown, ...(parsed.success ? [] : issuesFromZod(parsed.error))];
  if (issues.length > 0 || !parsed.success) return { ok: false, issues };
  const { status, type, eventId, from, to, limit, cursor } = parsed.data;
  return {
    ok: true,
    value: {
      limit,
      ...(status !== undefined ? { status } : {}),
      ...(type !== undefined ? { eventType: type } : {}),
      ...(eventId !== undefined ? { eventId } : {}),
      ...(from !== undefined ? { from } : {}),
      ...(to !== undefined ? { to } : {}),
      ...(cursor !== undefined ? { cursor } : {}),
    },
  };
}

/** The delivery log: one destination's deliveries, newest published first, filtered and paged (at most LIST_ANSWER_MAX_BYTES a page, answer-budget.ts). */
export async function listDeliveries(
  deps: DeliveriesDeps,
  destinationId: string,
  query: Record<string, unknown>,
): Promise<Outcome<{ deliveries: DeliveryView[]; nextCursor?: string }>> {
  if (!INTERNAL_DESTINATION_ID.test(destinationId)) return badId(destinationId);
  const parsed = parseDeliveriesQuery(query);
  if (!parsed.ok) return { kind: 'invalid', body: { error: 'invalid deliveries query', issues: parsed.issues } };
  // The head is read while the destination is: what it finds is used only if the destination is there.
  const [destination, fromHead] = await Promise.all([deps.destinations.get(destinationId), firstPageFromHead(deps, destinationId, parsed.value)]);
  if (!destination) return notFound(destinationId);
  const page = fromHead ?? (await deps.deliveries.log(destinationId, parsed.value));
  const views = page.deliveries.map(deliveryViewOf);
  // A page past the answer's byte budget ends early, its cursor right after its last row (the log's order: publishedAt, id).
  const fit = rowsWithin(views);
  const last = page.deliveries[fit - 1];
  const cut = fit < views.length && last?.publishedAt !== undefined ? { publishedAt: last.publishedAt, id: last.id } : undefined;
  const nextCursor = cut ? encodeLogCursor(cut) : page.nextCursor;
  return {
    kind: 'ok',
    body: { deliveries: cut ? views.slice(0, fit) : views, ...(nextCursor !== undefined ? { nextCursor } : {}) },
  };
}

/**
 * The unfiltered first page, read by id from the log's head: what the console opens on. Any
 * doubt (a filter, a cursor, a head not known to be complete, a record gone since) and the
 * store's indexed query answers instead.
 */
async function firstPageFromHead(deps: DeliveriesDeps, destinationId: string, q: DeliveryLogQuery): Promise<DeliveryPage | undefined> {
  if (!deps.logHead || q.cursor || q.status || q.eventType || q.eventId || q.from || q.to) return undefined;
  const head = await deps.logHead.head(destinationId, q.limit + 1);
  if (!head) return undefined;
  const rows = await deps.deliveries.logRows(head.map((e) => e[1]));
  if (rows.length !== head.length || rows.some((r) => r.destinationId !== destinationId)) return undefined;
  return logPage([...rows].sort(logOrder), q.limit);
}

export { isDeliveryId };

/** Not found: a delivery that does not exist, or that the caller may not see. */
export const noDelivery = (id: string): Outcome<never> => ({
  kind: 'not-found',
  body: { error: `no delivery ${JSON.stringify(id)}; list a destination's deliveries with GET /admin/destinations/{id}/deliveries` },
});

/** One delivery, if it belongs to `account` (a delivery of another account's destination is not there: not found). */
export async function getDelivery(deps: Pick<DeliveriesDeps, 'deliveries'>, id: string, account: string): Promise<Outcome<DeliveryView>> {
  if (!isDeliveryId(id)) {
    return {
      kind: 'invalid',
      body: {
        error: `invalid delivery id ${JSON.stringify(id)}`,
        issues: [{ path: 'deliveryId', message: 'a delivery id is <destination id>.<event key>, as GET /admin/destinations/{id}/deliveries lists them' }],
      },
    };
  }
  const record = splitDestinationId(id.slice(0, id.indexOf('.'))).account === account ? await deps.deliveries.get(id) : undefined;
  if (!record) return noDelivery(id);
  return { kind: 'ok', body: deliveryViewOf(record) };
}
