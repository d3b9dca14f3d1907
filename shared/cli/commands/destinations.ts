import { Command } from 'commander';
import { z } from 'zod';
import { DESTINATION_ID, destinationSpecSchema, FAILURE_MODES } from '../../domain/destination';
import { POLICY_PRESET_NAMES } from '../../domain/policy';
import { DestinationInfo } from '../client';
import { CommandContext, connectionOptions, issuesOf, usageError, validate } from '../context';
import { ApiError } from '../errors';

/** `herald destinations add|list|show|remove` over the admin API. */

export const destinationIdSchema = z
  .string()
  .regex(DESTINATION_ID, 'a destination id is 1-63 lowercase letters, digits and hyphens, starting and ending with a letter or digit');

const ID_ARG = { id: '<id>' };

/** The options as typed, into the API's destination spec, checked by the domain's own schema. */
const specFromOptions = z
  .object({
    url: z.string().optional(),
    topic: z.string().optional(),
    eventTypes: z
      .string()
      .transform((s) => s.split(',').map((t) => t.trim()).filter((t) => t !== ''))
      .optional(),
    // A preset's name, or a custom policy as inline JSON.
    policy: z
      .string()
      .transform((text, ctx): unknown => {
        if (!text.trim().startsWith('{')) return text;
        try {
          return JSON.parse(text) as unknown;
        } catch (e) {
          ctx.addIssue({ code: 'custom', message: `a custom policy must be valid JSON: ${(e as Error).message}` });
          return z.NEVER;
        }
      })
      .optional(),
    failureMode: z.string().optional(),
    secret: z.string().optional(),
    technicalEmail: z.string().optional(),
  })
  .transform((o) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)))
  .pipe(destinationSpecSchema);

const SPEC_FLAGS = {
  id: '<id>',
  url: '--url',
  topic: '--topic',
  eventTypes: '--event-types',
  policy: '--policy',
  failureMode: '--failure-mode',
  secret: '--secret',
  technicalEmail: '--technical-email',
};

/** A missing destination: say which, and how to see the ones there are. */
async function naming<T>(id: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (e) {
    if (e instanceof ApiError && e.status === 404 && !e.hint) {
      throw new ApiError(404, `no destination ${JSON.stringify(id)}`, e.issues, 'see the destinations there are with: herald destinations list');
    }
    throw e;
  }
}

function target(d: DestinationInfo): string {
  return d.url ?? d.topic ?? '';
}

/** Plain columns, widest cell wide; the last column is not padded. */
export function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ')).join('\n');
}

export function registerDestinations(program: Command, ctx: CommandContext): void {
  const group = program
    .command('destinations')
    .description('add, list, show and remove destinations (the webhooks and topics events go to)');

  const add = group
    .command('add')
    .argument('<id>', 'destination id: lowercase letters, digits and hyphens')
    .description('create a destination, or replace the spec of an existing one (PUT /admin/destinations/<id>)')
    .option('--url <url>', 'webhook URL that receives the events (https; loopback allowed locally)')
    .option('--topic <topic>', 'Pub/Sub topic, projects/P/topics/T (instead of --url)')
    .option('--event-types <types>', 'comma-separated event types; a trailing * matches a prefix (default: all)')
    .option('--policy <preset|json>', `delivery policy: ${POLICY_PRESET_NAMES.join(', ')} (default: ${POLICY_PRESET_NAMES[0]}), or a custom policy as JSON`)
    .option('--failure-mode <mode>', `what happens after the retries: ${FAILURE_MODES.join(' or ')} (default: retry)`)
    .option('--secret <secret>', 'signing secret, whsec_… (default: Herald generates one)')
    .option('--technical-email <email>', 'who to tell when the destination is suspended');
  connectionOptions(add, 'admin', { url: false });
  add.addHelpText(
    'after',
    `
Here --url is the webhook's URL: give Herald's own with HERALD_URL, or
"herald --url <herald> destinations add …". The answer shows the signing secret
once, on creation or when --secret is given: store it.

Example:
  herald destinations add orders --url https://hooks.example.com/orders --event-types 'com.example.order.*'`,
  );
  add.action(async (id: string) => {
    // Every problem at once: the id and the spec.
    const idResult = issuesOf(z.object({ id: destinationIdSchema }), { id }, ID_ARG);
    const { adminToken: _token, ...options } = add.opts<Record<string, unknown>>();
    const specResult = issuesOf(specFromOptions, options, SPEC_FLAGS);
    if (!idResult.ok || !specResult.ok) throw usageError(add, [...(idResult.ok ? [] : idResult.issues), ...(specResult.ok ? [] : specResult.issues)]);
    const destinationId = idResult.data.id;
    const spec = specResult.data;
    const client = ctx.client(add, 'admin');
    const { created, destination } = await client.putDestination(destinationId, spec);
    ctx.json(destination);
    ctx.note(`${created ? 'created' : 'updated'} destination ${destinationId}`);
    if (destination.secret !== undefined) ctx.note('store this secret: it is shown once');
  });

  const list = group
    .command('list')
    .description('list the destinations (a table; --json for the full objects)')
    .option('--json', 'print a JSON array instead of a table');
  connectionOptions(list, 'admin');
  list.action(async () => {
    const destinations = await ctx.client(list, 'admin').listDestinations();
    if (list.opts<{ json?: boolean }>().json) {
      ctx.json(destinations);
      return;
    }
    if (destinations.length === 0) {
      ctx.note('no destinations yet; add one with: herald destinations add <id> --url <url>');
      return;
    }
    const rows = [
      ['ID', 'STATUS', 'POLICY', 'ON FAILURE', 'EVENT TYPES', 'TARGET'],
      ...[...destinations]
        .sort((a, b) => a.id.localeCompare(b.id))
        .map((d) => [d.id, d.status, typeof d.policy === 'string' ? d.policy : 'custom', d.failureMode, d.eventTypes.length ? d.eventTypes.join(',') : '(all)', target(d)]),
    ];
    ctx.out(table(rows));
  });

  const show = group
    .command('show')
    .argument('<id>', 'destination id')
    .description('show one destination as JSON (its secret is never shown again)');
  connectionOptions(show, 'admin');
  show.action(async (id: string) => {
    const destinationId = validate(z.object({ id: destinationIdSchema }), { id }, ID_ARG, show).id;
    const client = ctx.client(show, 'admin');
    ctx.json(await naming(destinationId, () => client.getDestination(destinationId)));
  });

  const remove = group
    .command('remove')
    .argument('<id>', 'destination id')
    .description('delete a destination; events no longer go to it');
  connectionOptions(remove, 'admin');
  remove.action(async (id: string) => {
    const destinationId = validate(z.object({ id: destinationIdSchema }), { id }, ID_ARG, remove).id;
    const client = ctx.client(remove, 'admin');
    await naming(destinationId, () => client.deleteDestination(destinationId));
    ctx.note(`removed destination ${destinationId}`);
  });
}
