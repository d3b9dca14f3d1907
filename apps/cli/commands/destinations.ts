import { Command } from 'commander';
import { z } from 'zod';
import { MANUAL_REASON_MAX } from '../../../shared/domain/destinations/suspension';
import { accountFlag, naming } from '../answers';
import { CommandContext, connectionOptions, validate } from '../context';
import { batchCell } from '../batch-flags';
import { orderingCell } from '../ordering-flags';
import { registerOrderedKeys } from './ordered-keys';
import { destinationIdSchema, ID_ARG, noDestination, table } from './destination-args';
import { registerAddDestination } from './destination-add';
import { destinationSummary, plural, redeliveredText, target } from './destination-summary';
import { registerRotateSecret } from './rotate-secret';
import { registerFilterTest } from './filter-test';
import { registerRotateAuth } from './rotate-auth';

/** `herald destinations add|list|show|remove|suspend|reactivate|redeliver|rotate-secret|filter-test|blocked-keys|skip-key` over the admin API. */

export function registerDestinations(program: Command, ctx: CommandContext): void {
  const group = program
    .command('destinations')
    .description('add, list, show, remove, suspend, reactivate, redeliver and rotate the secret of destinations (the webhooks and topics events go to), and release their held keys');

  registerAddDestination(group, ctx);

  const list = group
    .command('list')
    .description('list the destinations (a table; --json for the full objects)')
    .option('--json', 'print a JSON array instead of a table');
  connectionOptions(list, 'admin');
  list.action(async () => {
    const { client, account } = ctx.connect(list, 'admin');
    const destinations = await client.listDestinations();
    if (list.opts<{ json?: boolean }>().json) {
      ctx.json(destinations);
      return;
    }
    if (destinations.length === 0) {
      ctx.note(`no destinations yet${account === undefined ? '' : ` in account ${account}`}; add one with: herald destinations add <id> --url <url>${accountFlag(account)}`);
      return;
    }
    // BATCH and ORDERING columns only when one is batched or ordered: the table stays as narrow as it was for the rest.
    const batched = destinations.some((d) => d.batch !== undefined);
    const ordered = destinations.some((d) => d.ordering !== undefined);
    const rows = [
      ['ID', 'STATUS', 'POLICY', 'ON FAILURE', 'EVENT TYPES', ...(batched ? ['BATCH'] : []), ...(ordered ? ['ORDERING'] : []), 'TARGET'],
      ...[...destinations]
        .sort((a, b) => a.id.localeCompare(b.id))
        .map((d) => [d.id, d.status, typeof d.policy === 'string' ? d.policy : 'custom', d.failureMode ?? 'account', d.eventTypes.length ? d.eventTypes.join(',') : '(all)', ...(batched ? [batchCell(d.batch)] : []), ...(ordered ? [orderingCell(d.ordering)] : []), target(d)]),
    ];
    ctx.out(table(rows));
  });

  const show = group
    .command('show')
    .argument('<id>', 'destination id')
    .description('show one destination as JSON, with its status, suspension and last hour (its secret is never shown again)')
    .option('--json', 'print only the JSON (no summary on stderr)');
  connectionOptions(show, 'admin');
  show.addHelpText(
    'after',
    `
stdout gets the destination as JSON: its "status" (active or suspended), "suspension"
while suspended (cause, reason, at, lastError, attempts1h, successRate1h, recentErrors,
notification), "stats" (attempts1h, successRate1h, lastErrors) over the rolling hour and
"batch" when its events go many to a request, "ordering" when they go in order per key.
stderr gets a short summary for people, unless --json.`,
  );
  show.action(async (id: string) => {
    const input = validate(z.object({ id: destinationIdSchema, json: z.boolean().optional() }), { id, json: show.opts<{ json?: boolean }>().json }, ID_ARG, show);
    const { client, account } = ctx.connect(show, 'admin');
    const destination = await naming(() => client.getDestination(input.id), noDestination(input.id, account));
    ctx.json(destination);
    if (!input.json) for (const line of destinationSummary(destination)) ctx.note(line);
  });

  const remove = group
    .command('remove')
    .alias('delete')
    .argument('<id>', 'destination id')
    .description('delete a destination; events no longer go to it (refused while it has deliveries to send, unless --deliveries dead)')
    .option('--deliveries <what>', 'dead: delete it even with PENDING, IN_FLIGHT or QUEUED deliveries; each becomes DEAD with a dead letter')
    .option('--json', 'print the answer, {"id", "deleted", "dead", "byStatus"}, with --deliveries dead');
  connectionOptions(remove, 'admin');
  remove.addHelpText(
    'after',
    `
A destination with deliveries still to send (PENDING, IN_FLIGHT or QUEUED) is not deleted
(exit 1, with how many): send them first (herald destinations redeliver <id>, or reactivate
it if it is suspended), or remove it anyway with --deliveries dead. Those deliveries become
DEAD with dead letters (reason destination-deleted): a replay sends them once a destination
with the same id exists again.

Examples:
  herald destinations remove orders
  herald destinations remove orders --deliveries dead`,
  );
  remove.action(async (id: string) => {
    const opts = remove.opts<{ deliveries?: string; json?: boolean }>();
    const input = validate(
      z.object({ id: destinationIdSchema, deliveries: z.literal('dead', { error: '--deliveries takes one value: dead' }).optional(), json: z.boolean().optional() }),
      { id, deliveries: opts.deliveries, json: opts.json },
      { ...ID_ARG, deliveries: '--deliveries' },
      remove,
    );
    const { client, account } = ctx.connect(remove, 'admin');
    const where = account === undefined ? '' : ` of account ${account}`;
    const sendFirst = `send them first (herald destinations redeliver ${input.id}${accountFlag(account)}, or reactivate it if it is suspended), or remove it anyway, making them DEAD with dead letters: herald destinations remove ${input.id} --deliveries dead${accountFlag(account)}`;
    const result = await naming(() => client.deleteDestination(input.id, input.deliveries ? { deliveries: input.deliveries } : {}), noDestination(input.id, account), sendFirst);
    if (input.json && result) ctx.json(result);
    if (!result) ctx.note(`removed destination ${input.id}${where}`);
    else ctx.note(`${result.deleted ? 'removed' : 'already removed:'} destination ${input.id}${where}; ${plural(result.dead, 'delivery', 'deliveries')} made DEAD with dead letters (${result.byStatus.PENDING} PENDING, ${result.byStatus.IN_FLIGHT} IN_FLIGHT, ${result.byStatus.QUEUED} QUEUED)`);
  });

  const suspend = group
    .command('suspend')
    .argument('<id>', 'destination id')
    .description('suspend a destination by hand: nothing is sent to it and its events are QUEUED until it is reactivated')
    .option('--reason <text>', `why, shown with the suspension and in its notification (at most ${MANUAL_REASON_MAX} characters)`)
    .option('--json', 'print the answer, {"destination": {...}}, instead of a line');
  connectionOptions(suspend, 'admin');
  suspend.addHelpText(
    'after',
    `
The same suspension Herald makes itself (cause "manual", with who did it): new events and due
retries are QUEUED, none lost, and the notification is published. A destination already
suspended is exit 1. To send to it again: herald destinations reactivate <id>.

Example:
  herald destinations suspend orders --reason 'receiver maintenance until 14:00 UTC'`,
  );
  suspend.action(async (id: string) => {
    const opts = suspend.opts<{ reason?: string; json?: boolean }>();
    const input = validate(
      z.object({ id: destinationIdSchema, reason: z.string().trim().min(1, 'the reason must not be blank').max(MANUAL_REASON_MAX, `the reason is at most ${MANUAL_REASON_MAX} characters`).optional(), json: z.boolean().optional() }),
      { id, reason: opts.reason, json: opts.json },
      ID_ARG,
      suspend,
    );
    const { client, account } = ctx.connect(suspend, 'admin');
    const result = await naming(() => client.suspendDestination(input.id, input.reason), noDestination(input.id, account), `to send to it again: herald destinations reactivate ${input.id}${accountFlag(account)}`);
    if (input.json) ctx.json(result);
    else ctx.out(`${input.id} suspended${result.destination.suspension?.reason ? `: ${result.destination.suspension.reason}` : ''}; its events are QUEUED until: herald destinations reactivate ${input.id}${accountFlag(account)}`);
  });

  const reactivate = group
    .command('reactivate')
    .argument('<id>', 'destination id')
    .description('lift a suspension: the destination is active again and its QUEUED deliveries are sent again')
    .option('--json', 'print the answer, {"destination": {...}, "redelivered": n}, instead of a line');
  connectionOptions(reactivate, 'admin');
  reactivate.addHelpText(
    'after',
    `
Fix the endpoint first: a destination that still fails is suspended again. The retry pump
sends the queued deliveries, 100 a round. A destination that is not suspended is exit 1
(to send its queued deliveries again, use herald destinations redeliver).

Example:
  herald destinations reactivate orders     # orders reactivated; 4 queued deliveries sent again`,
  );
  reactivate.action(async (id: string) => {
    const input = validate(z.object({ id: destinationIdSchema, json: z.boolean().optional() }), { id, json: reactivate.opts<{ json?: boolean }>().json }, ID_ARG, reactivate);
    const { client, account } = ctx.connect(reactivate, 'admin');
    const result = await naming(() => client.reactivateDestination(input.id), noDestination(input.id, account), `to send its queued deliveries again: herald destinations redeliver ${input.id}${accountFlag(account)}`);
    if (input.json) ctx.json(result);
    else ctx.out(`${input.id} reactivated; ${plural(result.redelivered, 'queued delivery', 'queued deliveries')} sent again`);
  });

  const redeliver = group
    .command('redeliver')
    .argument('<id>', 'destination id')
    .description("send a destination's QUEUED deliveries again (--dead: its DEAD ones), each with a fresh retry budget")
    .option('--dead', 'the DEAD deliveries instead of the QUEUED ones')
    .option('--json', 'print the answer, {"redelivered": n, "status": "QUEUED" | "DEAD"}, instead of a line');
  connectionOptions(redeliver, 'admin');
  redeliver.addHelpText(
    'after',
    `
The deliveries become PENDING, due now; the retry pump sends them, 100 a round. A
suspended destination is exit 1: reactivate it instead (that also sends its queued
deliveries).

Examples:
  herald destinations redeliver orders          # the QUEUED deliveries (failureMode queue, or a lifted suspension)
  herald destinations redeliver orders --dead   # the DEAD ones`,
  );
  registerRotateSecret(group, ctx);
  registerFilterTest(group, ctx);
  registerRotateAuth(group, ctx);
  registerOrderedKeys(group, ctx);

  redeliver.action(async (id: string) => {
    const opts = redeliver.opts<{ dead?: boolean; json?: boolean }>();
    const input = validate(z.object({ id: destinationIdSchema, dead: z.boolean().optional(), json: z.boolean().optional() }), { id, dead: opts.dead, json: opts.json }, ID_ARG, redeliver);
    const { client, account } = ctx.connect(redeliver, 'admin');
    const result = await naming(() => client.redeliver(input.id, input.dead ? 'dead' : 'queued'), noDestination(input.id, account), `reactivate it, which also sends its queued deliveries: herald destinations reactivate ${input.id}${accountFlag(account)}`);
    if (input.json) ctx.json(result);
    else ctx.out(redeliveredText(input.id, result));
  });
}
