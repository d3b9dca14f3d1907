import { Command } from 'commander';
import { z } from 'zod';
import { DEFAULT_GRACE_SECONDS } from '../../../shared/domain/destinations/secret-rotation';
import { naming } from '../answers';
import { CommandContext, connectionOptions, usageError, validate } from '../context';
import { receiverFromFlags } from '../receiver-flags';
import { destinationIdSchema, noDestination } from './destination-args';
import { graceSchema } from './rotate-secret';

/** `herald destinations rotate-auth <id> --receiver FILE [--grace 24h]`: new receiver credentials, the old ones the fallback after a refusal for a while. */
export function registerRotateAuth(group: Command, ctx: CommandContext): void {
  const rotate = group
    .command('rotate-auth')
    .argument('<id>', 'destination id')
    .description('give a webhook destination new receiver auth, headers or client certificate; the replaced ones are tried after a refusal for a grace period')
    .requiredOption('--receiver <file>', 'a JSON file whose "auth", "headers" and/or "tls" are the new ones (credentials from a file, never flags)')
    .option('--grace <duration>', `how long a refusal (401, 403, a rejected certificate) falls back to the replaced ones: seconds, or 30m, 24h, 7d (default ${DEFAULT_GRACE_SECONDS / 3600}h; 0: never)`)
    .option('--json', 'print the answer (the destination, no credential) instead of a line');
  connectionOptions(rotate, 'admin');
  rotate.action(async (id: string) => {
    const opts = rotate.opts<{ receiver: string; grace?: string; json?: boolean }>();
    const input = validate(z.object({ id: destinationIdSchema, grace: graceSchema.optional() }), { id, grace: opts.grace }, { id: '<id>', grace: '--grace' }, rotate);
    const file = receiverFromFlags({ receiver: opts.receiver });
    if (!file.ok) throw usageError(rotate, file.issues);
    const { auth, headers, tls } = file.receiver;
    if (!auth && !headers && !tls) throw usageError(rotate, [{ path: '--receiver', message: 'the file must give the new "auth", "headers" or "tls"' }]);
    const { client, account } = ctx.connect(rotate, 'admin');
    const request = { ...(auth ? { auth } : {}), ...(headers ? { headers } : {}), ...(tls ? { tls } : {}), ...(input.grace !== undefined ? { graceSeconds: input.grace } : {}) };
    const result = await naming(() => client.rotateAuth(input.id, request), noDestination(input.id, account));
    if (opts.json) return ctx.json(result);
    const shown = result as { previousAuth?: { expiresAt: string }; previousHeaders?: { expiresAt: string }; previousTls?: { expiresAt: string } };
    const what = [auth && 'auth', headers && 'headers', tls && 'client certificate'].filter(Boolean).join(', ');
    const previous = (auth && shown.previousAuth) || (headers && shown.previousHeaders) || (tls && shown.previousTls) || undefined;
    ctx.note(`${input.id}: new receiver ${what} in use${previous ? `; the replaced ones answer a refusal until ${previous.expiresAt}` : ''}`);
  });
}
