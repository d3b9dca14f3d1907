import { Command } from 'commander';
import { z } from 'zod';
import { DEFAULT_GRACE_SECONDS } from '../../../shared/domain/destinations/secret-rotation';
import { naming } from '../answers';
import { CommandContext, connectionOptions, usageError, validate } from '../context';
import { receiverFromFlags } from '../receiver-flags';
import { destinationIdSchema, noDestination } from './destination-args';
import { graceSchema } from './rotate-secret';

/** `herald destinations rotate-auth <id> --receiver FILE [--grace 24h]`: new receiver auth, the old one a 401 fallback for a while. */
export function registerRotateAuth(group: Command, ctx: CommandContext): void {
  const rotate = group
    .command('rotate-auth')
    .argument('<id>', 'destination id')
    .description('give a webhook destination new receiver auth; the replaced one is tried after a 401 for a grace period')
    .requiredOption('--receiver <file>', 'a JSON file whose "auth" is the new auth (credentials from a file, never flags)')
    .option('--grace <duration>', `how long a 401 falls back to the replaced auth: seconds, or 30m, 24h, 7d (default ${DEFAULT_GRACE_SECONDS / 3600}h; 0: never)`)
    .option('--json', 'print the answer (the destination, no credential) instead of a line');
  connectionOptions(rotate, 'admin');
  rotate.action(async (id: string) => {
    const opts = rotate.opts<{ receiver: string; grace?: string; json?: boolean }>();
    const input = validate(z.object({ id: destinationIdSchema, grace: graceSchema.optional() }), { id, grace: opts.grace }, { id: '<id>', grace: '--grace' }, rotate);
    const file = receiverFromFlags({ receiver: opts.receiver });
    if (!file.ok) throw usageError(rotate, file.issues);
    if (!file.receiver.auth) throw usageError(rotate, [{ path: '--receiver.auth', message: 'the file must give the new "auth"' }]);
    const { client, account } = ctx.connect(rotate, 'admin');
    const result = await naming(() => client.rotateAuth(input.id, { auth: file.receiver.auth, ...(input.grace !== undefined ? { graceSeconds: input.grace } : {}) }), noDestination(input.id, account));
    if (opts.json) return ctx.json(result);
    const previous = (result as { previousAuth?: { expiresAt: string } }).previousAuth;
    ctx.note(`${input.id}: new receiver auth in use${previous ? `; the replaced one answers a 401 until ${previous.expiresAt}` : ''}`);
  });
}
