import { Command } from 'commander';
import { z } from 'zod';
import { SECRET } from '../../../shared/domain/destinations/destination';
import { DEFAULT_GRACE_SECONDS, MAX_GRACE_SECONDS } from '../../../shared/domain/destinations/secret-rotation';
import { naming } from '../answers';
import { CommandContext, connectionOptions, validate } from '../context';
import { destinationIdSchema, noDestination } from './destination-args';
import { plural } from './destination-summary';

/** `herald destinations rotate-secret`: a new signing secret, the old one kept for a grace period. */

/** "90", "90s", "30m", "24h", "7d" → seconds. */
export const graceSchema = z
  .string()
  .regex(/^\d+[smhd]?$/, 'the grace period is seconds, or a number with s, m, h or d (e.g. 24h)')
  .transform((text) => Number(text.replace(/[smhd]$/, '')) * ({ s: 1, m: 60, h: 3600, d: 86400 }[text.slice(-1)] ?? 1))
  .refine((seconds) => seconds <= MAX_GRACE_SECONDS, `the grace period is at most ${MAX_GRACE_SECONDS / 86400} days`);

export function registerRotateSecret(group: Command, ctx: CommandContext): void {
  const rotate = group
    .command('rotate-secret')
    .argument('<id>', 'destination id')
    .description("give a webhook destination a new signing secret; the old one keeps signing beside it for a grace period")
    .option('--secret <secret>', 'the new secret, whsec_… (default: Herald generates one)')
    .option('--grace <duration>', `how long the old secret stays valid: seconds, or 30m, 24h, 7d (default ${DEFAULT_GRACE_SECONDS / 3600}h; 0 drops it at once)`)
    .option('--json', 'print the answer (the destination with its new "secret") instead of lines');
  connectionOptions(rotate, 'admin');
  rotate.addHelpText(
    'after',
    `
During the grace period every delivery carries two signatures in webhook-signature, one
per secret (space-separated), so receivers verify with either: switch them to the new
secret, then let the old one expire. The new secret is shown once: store it.

Example:
  herald destinations rotate-secret orders --grace 48h`,
  );
  rotate.action(async (id: string) => {
    const opts = rotate.opts<{ secret?: string; grace?: string; json?: boolean }>();
    const schema = z.object({
      id: destinationIdSchema,
      secret: z.string().regex(SECRET, 'the secret must be whsec_ followed by base64 of 24 to 64 random bytes').optional(),
      grace: graceSchema.optional(),
      json: z.boolean().optional(),
    });
    const input = validate(schema, { id, secret: opts.secret, grace: opts.grace, json: opts.json }, { id: '<id>', secret: '--secret', grace: '--grace' }, rotate);
    const { client, account } = ctx.connect(rotate, 'admin');
    const request = { ...(input.secret !== undefined ? { secret: input.secret } : {}), ...(input.grace !== undefined ? { graceSeconds: input.grace } : {}) };
    const result = await naming(() => client.rotateSecret(input.id, request), noDestination(input.id, account));
    if (input.json) {
      ctx.json(result);
      return;
    }
    ctx.out(result.secret);
    ctx.note(`${input.id}: new signing secret above; store it, it is shown once`);
    // With a grace period the replaced secret is the first of previousSecrets; any others are older rotations still running.
    const previous = result.previousSecrets ?? [];
    const replacedKept = input.grace !== 0 && previous.length > 0;
    ctx.note(replacedKept ? `the previous secret keeps signing until ${previous[0]!.expiresAt}` : 'the previous secret no longer signs');
    const older = replacedKept ? previous.slice(1) : previous;
    if (older.length) ctx.note(`${plural(older.length, 'older secret', 'older secrets')} still signing until ${older.map((p) => p.expiresAt).join(', ')}`);
  });
}
