import { Command } from 'commander';
import { z } from 'zod';
import type { HeldKeyView } from '../../../shared/app/admin/ordered-keys-admin';
import { BLOCKED_KEYS_LIMIT } from '../../../shared/app/admin/ordered-keys-admin';
import { PARTITION_KEY_MAX } from '../../../shared/domain/modes/ordering';
import { accountFlag, naming } from '../answers';
import { CommandContext, connectionOptions, validate } from '../context';
import { destinationIdSchema, noDestination, table } from './destination-args';

/** `herald destinations blocked-keys|skip-key`: the keys of an ordered destination held by an event, and moving one on. */

const keySchema = z.string().min(1, 'must not be empty: the partition key, as blocked-keys lists it').max(PARTITION_KEY_MAX, `is at most ${PARTITION_KEY_MAX} characters, as partition keys are`);

export function heldKeysTable(keys: readonly HeldKeyView[]): string {
  return table([['KEY', 'STATUS', 'HELD', 'SINCE', 'EVENT ID', 'DELIVERY ID'], ...keys.map((k) => [k.key, k.status, k.why, k.since, k.eventId, k.deliveryId])]);
}

export function registerOrderedKeys(group: Command, ctx: CommandContext): void {
  const blocked = group
    .command('blocked-keys')
    .argument('<id>', 'destination id')
    .description(`list the partition keys of an ordered destination held by an event that ended DEAD or QUEUED, oldest first (at most ${BLOCKED_KEYS_LIMIT}; a table, --json for the objects)`)
    .option('--json', 'print a JSON array instead of a table');
  connectionOptions(blocked, 'admin');
  blocked.addHelpText(
    'after',
    `
A key is held when its event ended DEAD or QUEUED under --ordering-on-failure block, or
while the destination is suspended (HELD says which): its later events wait behind it.
Release it by sending that event again (it goes first, then the rest), or by skipping it:
herald destinations skip-key <id> <key>.`,
  );
  blocked.action(async (id: string) => {
    const input = validate(z.object({ id: destinationIdSchema, json: z.boolean().optional() }), { id, json: blocked.opts<{ json?: boolean }>().json }, { id: '<id>' }, blocked);
    const { client, account } = ctx.connect(blocked, 'admin');
    const keys = await naming(() => client.blockedKeys(input.id), noDestination(input.id, account));
    if (input.json) {
      ctx.json(keys);
      return;
    }
    if (keys.length === 0) {
      ctx.note(`no key of ${input.id} is held`);
      return;
    }
    ctx.out(heldKeysTable(keys));
    if (keys.length >= BLOCKED_KEYS_LIMIT) ctx.note(`the oldest ${BLOCKED_KEYS_LIMIT} held keys: release some to see the rest`);
    const on = `${input.id}${accountFlag(account)}`;
    ctx.note(`release a key: herald destinations skip-key ${input.id} <key>${accountFlag(account)} (its event stays as it is), or send its event again, which goes first:`);
    ctx.note(`  DEAD: herald destinations redeliver ${on} --dead; QUEUED: herald destinations redeliver ${on}; while suspended: herald destinations reactivate ${on}`);
  });

  const skip = group
    .command('skip-key')
    .argument('<id>', 'destination id')
    .argument('<key>', 'the held partition key, as blocked-keys lists it')
    .description("move a held key of an ordered destination past the event that holds it; the key's next event is sent")
    .option('--json', 'print the answer, {"key", "seq", "deliveryId", "eventId", "status"}, instead of a line');
  connectionOptions(skip, 'admin');
  skip.addHelpText(
    'after',
    `
The event the key moves past stays DEAD or QUEUED: redelivered later, it goes to the end of
its key. A key that is not held is exit 1.

Example:
  herald destinations skip-key ledger customer-42`,
  );
  skip.action(async (id: string, key: string) => {
    const input = validate(z.object({ id: destinationIdSchema, key: keySchema, json: z.boolean().optional() }), { id, key, json: skip.opts<{ json?: boolean }>().json }, { id: '<id>', key: '<key>' }, skip);
    const { client, account } = ctx.connect(skip, 'admin');
    const skipped = await naming(() => client.skipKey(input.id, input.key), noDestination(input.id, account), `see the held keys with: herald destinations blocked-keys ${input.id}${accountFlag(account)}`);
    if (input.json) ctx.json(skipped);
    else ctx.out(`${input.id}: key ${JSON.stringify(skipped.key)} moved past event ${skipped.eventId} (${skipped.status}, place ${skipped.seq}); its next event is on its way`);
  });
}
