import { Command } from 'commander';
import { z } from 'zod';
import { DELIVERY_PAGE, DeliveryView, isDeliveryId } from '../../../shared/app/admin/deliveries-admin';
import { DELIVERY_STATUSES } from '../../../shared/domain/retry/delivery';
import { DEFAULT_ACCOUNT, splitDestinationId } from '../../../shared/domain/ids';
import { isParked } from '../../../shared/domain/modes/ordering';
import { DeliveryPageInfo, DeliveryQuery, HeraldClient } from '../client';
import { CommandContext, connectionOptions, validate } from '../context';
import { ApiError } from '../errors';
import { accountFlag, naming } from '../answers';
import { destinationIdSchema, noDestination, table } from './destination-args';

/** `herald deliveries list|show` over the admin API: where each (event, destination) delivery stands. */

const LIMIT_MESSAGE = `must be a whole number from 1 to ${DELIVERY_PAGE.maxLimit}`;

export const listOptionsSchema = z.object({
  destination: destinationIdSchema,
  status: z
    .string()
    .transform((s) => s.trim().toUpperCase())
    .pipe(z.enum(DELIVERY_STATUSES, { error: `must be one of ${DELIVERY_STATUSES.join(', ')} (any case)` }))
    .optional(),
  type: z.string().min(1, 'must not be empty: leave it out for every type').optional(),
  eventId: z.string().min(1, "must not be empty: leave it out for every event").optional(),
  from: z.iso.datetime({ offset: true, error: 'must be an ISO 8601 date-time with a time zone, e.g. 2026-11-26T09:00:00Z' }).optional(),
  to: z.iso.datetime({ offset: true, error: 'must be an ISO 8601 date-time with a time zone, e.g. 2026-11-26T10:00:00Z' }).optional(),
  limit: z
    .string()
    .regex(/^\d{1,6}$/, LIMIT_MESSAGE)
    .transform(Number)
    .pipe(z.number().int().min(1, LIMIT_MESSAGE).max(DELIVERY_PAGE.maxLimit, LIMIT_MESSAGE))
    .optional(),
  cursor: z.string().min(1, 'must not be empty: pass the cursor the previous page printed').optional(),
  all: z.boolean().optional(),
  json: z.boolean().optional(),
});

const LIST_FLAGS = { destination: '<destination>', eventId: '--event-id' };

const deliveryIdSchema = z
  .string()
  .refine(isDeliveryId, 'a delivery id is <destination id>.<event key>, as the first column of herald deliveries list shows it');

/** A word the shell passes on unchanged, quoted when it has to be. */
function shellWord(s: string): string {
  return /^[\w.,:/=@%+-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

const dash = (s: string | undefined) => (s === undefined || s === '' ? '-' : s);

/** The batch that carried a delivery, as people count: "b_… 3 of 10". */
const batchOf = (d: DeliveryView) => (d.batch ? `${d.batch.id} ${d.batch.position + 1} of ${d.batch.size}` : '-');

/** An ordered delivery's key and place in it: "customer-42 #3". */
const orderOf = (d: DeliveryView) => (d.order ? `${d.order.key} #${d.order.seq}` : '-');

export function deliveriesTable(deliveries: readonly DeliveryView[]): string {
  // BATCH and ORDER columns only when one was batched or ordered: other destinations keep the table they had.
  const batched = deliveries.some((d) => d.batch !== undefined);
  const ordered = deliveries.some((d) => d.order !== undefined);
  return table([
    ['DELIVERY ID', 'EVENT ID', 'TYPE', 'STATUS', 'ATTEMPTS', 'LAST ERROR', ...(batched ? ['BATCH'] : []), ...(ordered ? ['ORDER'] : []), 'AVAILABLE AT'],
    // "(rate)": waiting for a turn of the destination's rate, not for a retry; it may come sooner.
    ...deliveries.map((d) => [
      d.id,
      d.eventId,
      d.eventType,
      d.status,
      String(d.attempts),
      dash(d.lastError?.error),
      ...(batched ? [batchOf(d)] : []),
      ...(ordered ? [orderOf(d)] : []),
      isParked(d) ? '(after its key\'s earlier events)' : d.rateDeferred && d.status === 'PENDING' && d.availableAt ? `${d.availableAt} (rate)` : dash(d.availableAt),
    ]),
  ]);
}

/** Every page from `query.cursor` on; a cursor that does not move is Herald's fault, not a loop. */
async function allPages(client: HeraldClient, destination: string, query: DeliveryQuery): Promise<DeliveryPageInfo> {
  const deliveries: DeliveryView[] = [];
  let cursor = query.cursor;
  for (;;) {
    const page = await client.listDeliveries(destination, { ...query, ...(cursor !== undefined ? { cursor } : {}) });
    deliveries.push(...page.deliveries);
    if (page.nextCursor === undefined) return { deliveries };
    if (page.nextCursor === cursor) {
      throw new ApiError(200, `GET /admin/destinations/${destination}/deliveries returned the same cursor twice (${page.nextCursor})`, [], 'is the CLI the same version as Herald?');
    }
    cursor = page.nextCursor;
  }
}

export function registerDeliveries(program: Command, ctx: CommandContext): void {
  const group = program
    .command('deliveries')
    .description("inspect deliveries: where each event stands with each destination (status, attempts, last error)");

  const list = group
    .command('list')
    .argument('<destination>', 'destination id')
    .description("list a destination's deliveries, newest published first, a page at a time (a table; --json for the full objects)")
    .option('--status <status>', `only deliveries in this state: ${DELIVERY_STATUSES.join(', ')} (any case)`)
    .option('--type <type>', 'only events of this type')
    .option('--event-id <id>', "only this event's delivery")
    .option('--from <time>', 'only events published at or after this ISO 8601 time')
    .option('--to <time>', 'only events published before this ISO 8601 time')
    .option('--limit <n>', `deliveries per page, 1-${DELIVERY_PAGE.maxLimit} (default ${DELIVERY_PAGE.defaultLimit}; ${DELIVERY_PAGE.maxLimit} with --all)`)
    .option('--cursor <cursor>', 'start after this cursor, as the previous page printed it')
    .option('--all', 'follow the cursors to the last page')
    .option('--json', 'print {"deliveries": [...], "nextCursor"?} instead of a table');
  connectionOptions(list, 'admin');
  list.addHelpText(
    'after',
    `
When there are more deliveries than one page holds, the command to get the next page
is printed on stderr (stdout stays the table or the JSON).

Examples:
  herald deliveries list orders --status dead
  herald deliveries list orders --type com.example.order.paid --from 2026-11-26T09:00:00Z
  herald deliveries list orders --all --json`,
  );
  list.action(async (destination: string) => {
    const { adminToken: _token, apiKey: _key, account: _account, url: _url, ...options } = list.opts<Record<string, unknown>>();
    const input = validate(listOptionsSchema, { destination, ...options }, LIST_FLAGS, list);
    const { client, account } = ctx.connect(list, 'admin');
    const query: DeliveryQuery = {
      ...(input.status !== undefined ? { status: input.status } : {}),
      ...(input.type !== undefined ? { type: input.type } : {}),
      ...(input.eventId !== undefined ? { eventId: input.eventId } : {}),
      ...(input.from !== undefined ? { from: input.from } : {}),
      ...(input.to !== undefined ? { to: input.to } : {}),
      ...(input.limit !== undefined || input.all ? { limit: input.limit ?? DELIVERY_PAGE.maxLimit } : {}),
      ...(input.cursor !== undefined ? { cursor: input.cursor } : {}),
    };
    const page = await naming(() => (input.all ? allPages(client, input.destination, query) : client.listDeliveries(input.destination, query)), noDestination(input.destination, account));
    if (input.json) ctx.json(page);
    else if (page.deliveries.length === 0) ctx.note(`no deliveries${input.status ? ` with status ${input.status}` : ''}${input.type || input.eventId || input.from || input.to ? ' matching the filters' : ''} for destination ${input.destination}${input.cursor ? ' after this cursor' : ''}`);
    else ctx.out(deliveriesTable(page.deliveries));
    if (page.nextCursor !== undefined) {
      const again = ['herald deliveries list', input.destination];
      if (account !== undefined) again.push('--account', account);
      if (input.status !== undefined) again.push('--status', input.status);
      if (input.type !== undefined) again.push('--type', shellWord(input.type));
      if (input.eventId !== undefined) again.push('--event-id', shellWord(input.eventId));
      if (input.from !== undefined) again.push('--from', input.from);
      if (input.to !== undefined) again.push('--to', input.to);
      if (input.limit !== undefined) again.push('--limit', String(input.limit));
      if (input.json) again.push('--json');
      again.push('--cursor', shellWord(page.nextCursor));
      ctx.note(`more deliveries: ${again.join(' ')}   (or --all for every page)`);
    }
  });

  const show = group
    .command('show')
    .argument('<delivery-id>', 'delivery id, as herald deliveries list shows it')
    .description('show one delivery as JSON (its event data is never shown)');
  connectionOptions(show, 'admin');
  show.action(async (id: string) => {
    const deliveryId = validate(z.object({ id: deliveryIdSchema }), { id }, { id: '<delivery-id>' }, show).id;
    const { client, account } = ctx.connect(show, 'admin');
    // An id names its destination as Herald does inside (`acme_orders.…` in account acme), so without
    // --account the id's own account is asked: the operator shows what a list printed, no flag needed.
    const dest = splitDestinationId(deliveryId.slice(0, deliveryId.indexOf('.')));
    const inAccount = account ?? (dest.account === DEFAULT_ACCOUNT ? undefined : dest.account);
    const missing = { what: `no delivery ${JSON.stringify(deliveryId)}`, hint: `see the deliveries there are with: herald deliveries list ${dest.id}${accountFlag(inAccount)}` };
    ctx.json(await naming(() => client.getDelivery(deliveryId, account === undefined ? inAccount : undefined), missing));
  });
}
