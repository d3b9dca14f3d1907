import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { z } from 'zod';
import { MAX_FILTER_CHARS } from '../../../shared/domain/destinations/event-filter';
import { naming } from '../answers';
import { CommandContext, connectionOptions, validate } from '../context';
import { destinationIdSchema, noDestination, table } from './destination-args';

/** `herald destinations filter-test`: a CEL filter tried on the account's samples or on an event from a file; nothing is saved. */
export function registerFilterTest(group: Command, ctx: CommandContext): void {
  const test = group
    .command('filter-test')
    .argument('<id>', 'destination id (one not created yet: tried on every type\'s sample)')
    .description("try a CEL filter on the account's latest sample of each event type the destination takes, or on an event from a file")
    .option('--filter <cel>', "the expression to try (default: the destination's own filter)")
    .option('--event <file>', 'a CloudEvent in JSON (structured mode) to try it on, instead of the samples')
    .option('--json', 'print the answer instead of a table');
  connectionOptions(test, 'admin');
  test.addHelpText(
    'after',
    `
Each event shows whether the destination would take it, or why the filter errs on it (a
missing field, a type error): routing drops such an event for the destination, and counts it.

Examples:
  herald destinations filter-test big-orders --filter 'data.amount > 1000'
  herald destinations filter-test big-orders --event order.json`,
  );
  test.action(async (id: string) => {
    const opts = test.opts<{ filter?: string; event?: string; json?: boolean }>();
    const schema = z.object({
      id: destinationIdSchema,
      filter: z.string().min(1, 'the filter must not be empty').max(MAX_FILTER_CHARS, `the filter is at most ${MAX_FILTER_CHARS} characters`).optional(),
      event: z
        .string()
        .transform((file, c): unknown => {
          try {
            return JSON.parse(readFileSync(file, 'utf8')) as unknown;
          } catch (e) {
            c.addIssue({ code: 'custom', message: `cannot read a JSON event from ${file}: ${(e as Error).message}` });
            return z.NEVER;
          }
        })
        .optional(),
      json: z.boolean().optional(),
    });
    const input = validate(schema, { id, filter: opts.filter, event: opts.event, json: opts.json }, { id: '<id>', filter: '--filter', event: '--event' }, test);
    const { client, account } = ctx.connect(test, 'admin');
    const request = { ...(input.filter !== undefined ? { filter: input.filter } : {}), ...(input.event !== undefined ? { event: input.event } : {}) };
    const result = await naming(() => client.filterTest(input.id, request), noDestination(input.id, account));
    if (input.json) {
      ctx.json(result);
      return;
    }
    if (result.results.length === 0) ctx.note('no sample to try it on: the account has published no event of the types the destination takes yet; give one with --event');
    else ctx.out(table([['TYPE', 'ID', 'FROM', 'TAKES', 'ERROR'], ...result.results.map((r) => [r.type, r.id, r.from, r.pass ? 'yes' : 'no', r.error ?? (r.truncated ? '(sample cut at 8 KB)' : '')])]));
    const taken = result.results.filter((r) => r.pass).length;
    ctx.note(`${result.filter}: takes ${taken} of ${result.results.length}`);
  });
}
