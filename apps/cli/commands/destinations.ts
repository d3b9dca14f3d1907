import { Command } from 'commander';
import { z } from 'zod';
import { destinationSpecSchema, FAILURE_MODES, SECRET } from '../../../shared/domain/destinations/destination';
import { DEFAULT_GRACE_SECONDS, MAX_GRACE_SECONDS } from '../../../shared/domain/destinations/secret-rotation';
import { POLICY_PRESET_NAMES } from '../../../shared/domain/retry/policy';
import { MANUAL_REASON_MAX } from '../../../shared/domain/destinations/suspension';
import { DEFAULT_ACCOUNT } from '../../../shared/domain/ids';
import { DestinationInfo, RedeliverResult } from '../client';
import { accountFlag, naming } from '../answers';
import { CommandContext, connectionOptions, issuesOf, usageError, validate } from '../context';
import { BATCH_FLAG_HELP, BatchFlags, batchCell, batchFromFlags, batchSentence } from '../batch-flags';
import { ORDERING_FLAG_HELP, OrderingFlags, orderingCell, orderingFromFlags, orderingSentence, orderingWithBatch } from '../ordering-flags';
import { registerOrderedKeys } from './ordered-keys';

/** `herald destinations add|list|show|remove|suspend|reactivate|redeliver|rotate-secret|blocked-keys|skip-key` over the admin API. */

export { destinationIdSchema, noDestination, table } from './destination-args';
import { destinationIdSchema, noDestination, table } from './destination-args';

const ID_ARG = { id: '<id>' };

/** The options as typed, into the API's destination spec, checked by the domain's own schema. */
const eventsPerSecond = z
  .string()
  .regex(/^\d+(\.\d+)?$/, 'must be a number of events per second')
  .transform(Number);

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
    // The API checks the bounds (1-100, min ≤ max) and the lane's two names, and says which is wrong.
    rateMin: eventsPerSecond.optional(),
    rateMax: eventsPerSecond.optional(),
    lane: z.string().optional(),
  })
  .transform(({ rateMin, rateMax, ...o }) => ({
    ...Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)),
    ...(rateMin !== undefined || rateMax !== undefined ? { rate: { ...(rateMin !== undefined ? { min: rateMin } : {}), ...(rateMax !== undefined ? { max: rateMax } : {}) } } : {}),
  }))
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
  rateMin: '--rate-min',
  rateMax: '--rate-max',
  lane: '--lane',
};

/** A missing destination: which, and how to list the ones there are (in the same account). */

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

/** 0.9916 → "99.2 %". */
export function percent(rate: number): string {
  return `${(rate * 100).toFixed(1)} %`;
}

function hourText(attempts: number, successRate: number | undefined): string {
  return `${plural(attempts, 'attempt', 'attempts')}${successRate === undefined ? '' : `, ${percent(successRate)} succeeded`}`;
}

/** What `destinations show` says to people (stderr), beside the JSON: state, rolling hour, suspension. */
export function destinationSummary(d: DestinationInfo): string[] {
  const lines: string[] = [];
  const s = d.suspension;
  if (d.status === 'suspended' && s) {
    lines.push(`${d.id}: SUSPENDED since ${s.at} (${s.cause}${s.by ? ` by ${s.by}` : ''}): ${s.reason}`);
    lines.push(`  when suspended, last hour: ${hourText(s.attempts1h, s.successRate1h)}`);
    lines.push(`  notified: ${s.notification?.to ?? "nobody (no technicalEmail): the notice is in Herald's log and under suspension.notification"}`);
  } else {
    lines.push(`${d.id}: ${d.status}`);
  }
  if (d.batch) lines.push(`  sends ${batchSentence(d.batch)}`);
  if (d.ordering) lines.push(`  sends ${orderingSentence(d.ordering)}`);
  if (d.stats) {
    lines.push(`  last hour: ${hourText(d.stats.attempts1h, d.stats.successRate1h)}`);
    const last = d.stats.lastErrors[0];
    if (last) lines.push(`  last error: ${last.at}  ${last.error}`);
  }
  // Older Herald versions show no account: then it is `default`, which needs no --account.
  const inAccount = d.account === undefined || d.account === DEFAULT_ACCOUNT ? undefined : d.account;
  if (d.status === 'suspended') lines.push(`  its events are QUEUED; once the endpoint is fixed: herald destinations reactivate ${d.id}${accountFlag(inAccount)}`);
  return lines;
}

function redeliveredText(id: string, r: RedeliverResult): string {
  const which = r.status === 'DEAD' ? 'dead' : 'queued';
  return `${id}: ${plural(r.redelivered, `${which} delivery`, `${which} deliveries`)} sent again`;
}

function target(d: DestinationInfo): string {
  return d.url ?? d.topic ?? '';
}


export function registerDestinations(program: Command, ctx: CommandContext): void {
  const group = program
    .command('destinations')
    .description('add, list, show, remove, suspend, reactivate, redeliver and rotate the secret of destinations (the webhooks and topics events go to), and release their held keys');

  const add = group
    .command('add')
    .argument('<id>', 'destination id: lowercase letters, digits and hyphens')
    .description('create a destination, or replace the spec of an existing one (PUT /admin/destinations/<id>)')
    .option('--url <url>', 'webhook URL that receives the events (https; loopback allowed locally)')
    .option('--topic <topic>', 'Pub/Sub topic that receives the events, projects/P/topics/T, any project (instead of --url)')
    .option('--event-types <types>', 'comma-separated event types; a trailing * matches a prefix (default: all)')
    .option('--policy <preset|json>', `delivery policy: ${POLICY_PRESET_NAMES.join(', ')} (default: ${POLICY_PRESET_NAMES[0]}), or a custom policy as JSON`)
    .option('--failure-mode <mode>', `what happens after the retries: ${FAILURE_MODES.join(' or ')} (default: retry)`)
    .option('--secret <secret>', 'signing secret, whsec_… (default: Herald generates one)')
    .option('--technical-email <email>', 'who to tell when the destination is suspended')
    .option('--rate-min <n>', 'lowest rate adaptive rate control may go down to, events (requests, if batched) per second, 1-100 (default 1)')
    .option('--rate-max <n>', 'highest rate Herald sends at, events (requests, if batched) per second, 1-100 (default 100)')
    .option('--lane <shared|dedicated>', 'a lane (Pub/Sub topic) of its own for a high-volume destination (default: shared)')
    .option('--batch-max-events <n>', BATCH_FLAG_HELP.maxEvents)
    .option('--batch-max-wait-ms <ms>', BATCH_FLAG_HELP.maxWaitMs)
    .option('--batch-max-bytes <bytes>', BATCH_FLAG_HELP.maxBytes)
    .option('--ordering <key>', ORDERING_FLAG_HELP.ordering)
    .option('--ordering-on-failure <skip|block>', ORDERING_FLAG_HELP.onFailure);
  connectionOptions(add, 'admin', { url: false });
  add.addHelpText(
    'after',
    `
Here --url is the webhook's URL: give Herald's own with HERALD_URL, or
"herald --url <herald> destinations add …". The answer shows the signing secret
once, on creation or when --secret is given: store it.

A --topic destination gets each event as a CloudEvents Pub/Sub message (ce-*
attributes, the data unchanged). The topic must be on the account's allowed topics, which
the operator sets (herald accounts update <account> --allowed-topic <topic>), and Herald's
service account needs roles/pubsub.publisher on it. Its messages are not signed: the
topic's IAM says who may publish.

With --batch-max-events and --batch-max-wait-ms the destination gets events many to a
request (a JSON array, application/cloudevents-batch+json, signed once): a batch goes when
it is full, when the next event would take it past --batch-max-bytes, or when its oldest
event has waited --batch-max-wait-ms.

The spec is replaced whole: adding an existing id again without a flag it was given before
(--batch-*, --ordering, --rate-*, --lane, --policy …) sets that one back to its default, and
the note after the answer names each setting that changed that way.

With --ordering key, events that carry the CloudEvents partitionkey extension are sent one
at a time per key, in the order Herald accepted them (not with --batch-*). When a key's
event ends DEAD or QUEUED the key moves on (--ordering-on-failure skip, the default) or is
held (block) until that event is redelivered or the key skipped: see herald destinations
blocked-keys and skip-key. Adding the id again without --ordering turns ordering off.

Examples:
  herald destinations add orders --url https://hooks.example.com/orders --event-types 'com.example.order.*'
  herald destinations add audit --topic projects/acme-audit/topics/herald-events
  herald destinations add bulk --url https://hooks.example.com/bulk --batch-max-events 100 --batch-max-wait-ms 2000
  herald destinations add ledger --url https://hooks.example.com/ledger --ordering key --ordering-on-failure block
  herald destinations add partner --url https://partner.example.com/hook --rate-max 20 --lane dedicated`,
  );
  add.action(async (id: string) => {
    // Every problem at once: the id and the spec.
    const idResult = issuesOf(z.object({ id: destinationIdSchema }), { id }, ID_ARG);
    const { adminToken: _token, apiKey: _key, account: _account, batchMaxEvents, batchMaxWaitMs, batchMaxBytes, ordering, orderingOnFailure, ...options } = add.opts<Record<string, unknown> & BatchFlags & OrderingFlags>();
    const specResult = issuesOf(specFromOptions, options, SPEC_FLAGS);
    const batchResult = batchFromFlags({ batchMaxEvents, batchMaxWaitMs, batchMaxBytes });
    const orderingResult = orderingFromFlags({ ordering, orderingOnFailure });
    const both = batchResult.ok && batchResult.batch && orderingResult.ok && orderingResult.ordering ? [orderingWithBatch()] : [];
    if (!idResult.ok || !specResult.ok || !batchResult.ok || !orderingResult.ok || both.length > 0) {
      const issues = [idResult, specResult, batchResult, orderingResult].flatMap((r) => (r.ok ? [] : r.issues));
      throw usageError(add, [...issues, ...both]);
    }
    const destinationId = idResult.data.id;
    const spec = { ...specResult.data, ...(batchResult.batch ? { batch: batchResult.batch } : {}), ...(orderingResult.ordering ? { ordering: orderingResult.ordering } : {}) };
    const client = ctx.client(add, 'admin');
    const { created, destination } = await client.putDestination(destinationId, spec);
    ctx.json(destination);
    ctx.note(`${created ? 'created' : 'updated'} destination ${destinationId}`);
    // The PUT replaces the whole spec; the answer names what the old one had that this one left out.
    const reset = destination.reset ?? [];
    if (reset.length > 0) ctx.note(`back to the default, not given this time: ${reset.map((r) => `${r.setting} (was ${JSON.stringify(r.was)})`).join('; ')} — add the id again with those flags to keep them`);
    if (destination.secret !== undefined && destination.topic === undefined) ctx.note('store this secret: it is shown once');
    if (destination.topic !== undefined) ctx.note(`Herald publishes to ${destination.topic} as its runtime service account: it needs roles/pubsub.publisher on that topic (its owner grants it; docs/what-a-destination-receives.md#iam)`);
  });

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

/** "90", "90s", "30m", "24h", "7d" → seconds. */
const graceSchema = z
  .string()
  .regex(/^\d+[smhd]?$/, 'the grace period is seconds, or a number with s, m, h or d (e.g. 24h)')
  .transform((text) => Number(text.replace(/[smhd]$/, '')) * ({ s: 1, m: 60, h: 3600, d: 86400 }[text.slice(-1)] ?? 1))
  .refine((seconds) => seconds <= MAX_GRACE_SECONDS, `the grace period is at most ${MAX_GRACE_SECONDS / 86400} days`);

function registerRotateSecret(group: Command, ctx: CommandContext): void {
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

