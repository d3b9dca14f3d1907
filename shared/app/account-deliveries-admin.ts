import { z } from 'zod';
import { structuredEvent } from '../domain/cloudevents-http';
import { Destination } from '../domain/destination';
import { issuesFromZod } from '../domain/event';
import { splitDestinationId } from '../domain/ids';
import { AdminResult, destinationsOfAccount } from './destinations-admin';
import { DeliveriesDeps, deliveryLimitSchema, deliveryViewOf, DeliveryView } from './deliveries-admin';
import { redeliverAll, SuspensionDeps } from './suspension';

/**
 * Seed 003's retrieval of queued events: an account's QUEUED (or DEAD) deliveries across
 * its destinations, narrowed to one receiver URL, each with the event itself, so the
 * customer can fetch what its endpoint missed while it was down, and send it all again.
 */

const STATUSES = { queued: 'QUEUED', dead: 'DEAD' } as const;
const STATUS_MESSAGE = 'status must be "queued" or "dead" (any case)';
const CURSOR_MESSAGE = 'cursor must be the nextCursor of the previous page, unchanged';

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

export const accountRedeliverSchema = z
  .strictObject({ status: statusSchema.default('queued'), url: urlSchema.optional() }, { error: 'the body must be a JSON object {"status"?: "queued" | "dead", "url"?}' })
  .default({ status: 'queued' });

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** A queued delivery as seed 003 hands it back: the record, and the event (id, attributes, payload) in the CloudEvents JSON format. */
export type QueuedDeliveryView = DeliveryView & { event?: Record<string, unknown> };

/** The account's webhook destinations (to `url` when given), by id: the order pages follow. */
async function destinationsOf(deps: Pick<DeliveriesDeps, 'destinations'>, account: string, url: string | undefined): Promise<Destination[]> {
  return (await destinationsOfAccount(deps.destinations, account))
    .filter((d) => url === undefined || (d.url !== undefined && new URL(d.url).href === url))
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** `GET /admin/accounts/{id}/deliveries?status=queued&url=…`: a page across the account's destinations, destination by destination. */
export async function listAccountDeliveries(
  deps: DeliveriesDeps,
  account: string,
  query: Record<string, unknown>,
): Promise<AdminResult<{ deliveries: QueuedDeliveryView[]; nextCursor?: string }>> {
  const parsed = accountDeliveriesQuerySchema.safeParse(query);
  if (!parsed.success) return { status: 400, body: { error: 'invalid deliveries query', issues: issuesFromZod(parsed.error) } };
  const { status, url, limit, cursor } = parsed.data;
  const destinations = await destinationsOf(deps, account, url);
  let at = cursor ? destinations.findIndex((d) => d.id >= cursor.d) : 0;
  let inner = cursor && destinations[at]?.id === cursor.d ? cursor.c : undefined;
  const deliveries: QueuedDeliveryView[] = [];
  while (at >= 0 && at < destinations.length && deliveries.length < limit) {
    const destination = destinations[at]!;
    const page = await deps.deliveries.list(destination.id, { status: STATUSES[status], limit: limit - deliveries.length, ...(inner ? { cursor: inner } : {}) });
    deliveries.push(...page.deliveries.map((r) => ({ ...deliveryViewOf(r), ...(r.event ? { event: structuredEvent(r.event) } : {}) })));
    if (page.nextCursor !== undefined) {
      inner = page.nextCursor;
      if (deliveries.length >= limit) break;
    } else {
      at++;
      inner = undefined;
    }
  }
  const next = at >= 0 && at < destinations.length ? Buffer.from(JSON.stringify({ d: destinations[at]!.id, ...(inner ? { c: inner } : {}) })).toString('base64url') : undefined;
  return { status: 200, body: { deliveries, ...(next !== undefined ? { nextCursor: next } : {}) } };
}

/**
 * `POST /admin/accounts/{id}/deliveries/redeliver` `{"status"?, "url"?}`: those deliveries start
 * over. A suspended destination's are left QUEUED and named: reactivating it sends them.
 */
export async function postAccountRedeliver(
  deps: SuspensionDeps,
  account: string,
  body: unknown,
): Promise<AdminResult<{ redelivered: number; status: 'QUEUED' | 'DEAD'; destinations: { id: string; redelivered: number }[]; suspended: string[] }>> {
  const parsed = accountRedeliverSchema.safeParse(body);
  if (!parsed.success) return { status: 400, body: { error: 'invalid redeliver request', issues: issuesFromZod(parsed.error) } };
  const status = STATUSES[parsed.data.status];
  const destinations = await destinationsOf(deps, account, parsed.data.url);
  const suspended = destinations.filter((d) => d.status === 'suspended').map((d) => splitDestinationId(d.id).id);
  const counts: { id: string; redelivered: number }[] = [];
  for (const d of destinations.filter((d) => d.status !== 'suspended')) {
    counts.push({ id: splitDestinationId(d.id).id, redelivered: await redeliverAll(deps, d.id, status) });
  }
  return { status: 202, body: { redelivered: counts.reduce((n, c) => n + c.redelivered, 0), status, destinations: counts, suspended } };
}
