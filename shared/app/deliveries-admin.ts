import { z } from 'zod';
import { DELIVERY_STATUSES, DeliveryRecord, DeliveryStatus, isDeliveryId } from '../domain/delivery';
import { INTERNAL_DESTINATION_ID, splitDestinationId } from '../domain/ids';
import { issuesFromZod, ValidationIssue } from '../domain/event';
import { AdminDeps, AdminResult, badId, notFound } from './destinations-admin';

/**
 * The operators' view of deliveries (SPEC "Event states"): one destination's deliveries,
 * paged and filtered by status, and one delivery by id. Never the event's bytes.
 */

export type DeliveriesDeps = Pick<AdminDeps, 'destinations' | 'deliveries'>;

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
const QUERY_PARAMETERS = ['status', 'limit', 'cursor'] as const;

/** A page's size in a query string (the deliveries listings share it). */
export const deliveryLimitSchema = z
  .string({ error: `${LIMIT_MESSAGE}, given once` })
  .regex(/^\s*\d{1,6}\s*$/, LIMIT_MESSAGE)
  .transform(Number)
  .pipe(z.number().int().min(1, LIMIT_MESSAGE).max(DELIVERY_PAGE.maxLimit, LIMIT_MESSAGE))
  .default(DELIVERY_PAGE.defaultLimit);

/** The query string of GET /admin/destinations/{id}/deliveries. A repeated parameter arrives as an array and is refused. */
export const deliveriesQuerySchema = z.object({
  status: z
    .string({ error: `${STATUS_MESSAGE}, given once` })
    .transform((s) => s.trim().toUpperCase())
    .pipe(z.enum(DELIVERY_STATUSES, { error: STATUS_MESSAGE }))
    .optional(),
  limit: deliveryLimitSchema,
  cursor: z
    .string({ error: 'cursor must be given once, as the nextCursor of the previous page' })
    .min(1, 'cursor must not be empty: pass the nextCursor of the previous page, or leave it out for the first page')
    .max(1024, 'cursor is too long: pass the nextCursor of the previous page unchanged')
    .optional(),
});

export type DeliveriesQuery = { status?: DeliveryStatus; limit: number; cursor?: string };

/** Every problem with a query at once: unknown parameters and bad values, each by name. */
export function parseDeliveriesQuery(query: Record<string, unknown>): { ok: true; value: DeliveriesQuery } | { ok: false; issues: ValidationIssue[] } {
  const unknown = Object.keys(query)
    .filter((k) => !(QUERY_PARAMETERS as readonly string[]).includes(k))
    .map((k) => ({ path: k, message: `unknown query parameter; use ${QUERY_PARAMETERS.join(', ')}` }));
  const parsed = deliveriesQuerySchema.safeParse(query);
  const issues = [...unknown, ...(parsed.success ? [] : issuesFromZod(parsed.error))];
  if (issues.length > 0 || !parsed.success) return { ok: false, issues };
  const { status, limit, cursor } = parsed.data;
  return { ok: true, value: { limit, ...(status !== undefined ? { status } : {}), ...(cursor !== undefined ? { cursor } : {}) } };
}

export async function listDeliveries(
  deps: DeliveriesDeps,
  destinationId: string,
  query: Record<string, unknown>,
): Promise<AdminResult<{ deliveries: DeliveryView[]; nextCursor?: string }>> {
  if (!INTERNAL_DESTINATION_ID.test(destinationId)) return badId(destinationId);
  const parsed = parseDeliveriesQuery(query);
  if (!parsed.ok) return { status: 400, body: { error: 'invalid deliveries query', issues: parsed.issues } };
  if (!(await deps.destinations.get(destinationId))) return notFound(destinationId);
  const page = await deps.deliveries.list(destinationId, parsed.value);
  return {
    status: 200,
    body: { deliveries: page.deliveries.map(deliveryViewOf), ...(page.nextCursor !== undefined ? { nextCursor: page.nextCursor } : {}) },
  };
}

export { isDeliveryId };

/** One delivery, if it belongs to `account` (a delivery of another account's destination is not there: 404). */
export async function getDelivery(deps: Pick<DeliveriesDeps, 'deliveries'>, id: string, account: string): Promise<AdminResult<DeliveryView>> {
  if (!isDeliveryId(id)) {
    return {
      status: 400,
      body: {
        error: `invalid delivery id ${JSON.stringify(id)}`,
        issues: [{ path: 'deliveryId', message: 'a delivery id is <destination id>.<event key>, as GET /admin/destinations/{id}/deliveries lists them' }],
      },
    };
  }
  const record = splitDestinationId(id.slice(0, id.indexOf('.'))).account === account ? await deps.deliveries.get(id) : undefined;
  if (!record) {
    return { status: 404, body: { error: `no delivery ${JSON.stringify(id)}; list a destination's deliveries with GET /admin/destinations/{id}/deliveries` } };
  }
  return { status: 200, body: deliveryViewOf(record) };
}
