import { Command } from 'commander';
import { z } from 'zod';
import { destinationSpecSchema, FAILURE_MODES } from '../../../shared/domain/destinations/destination';
import { POLICY_PRESET_NAMES } from '../../../shared/domain/retry/policy-preset-names';
import { CommandContext, connectionOptions, issuesOf, usageError } from '../context';
import { BATCH_FLAG_HELP, BatchFlags, batchFromFlags } from '../batch-flags';
import { ORDERING_FLAG_HELP, OrderingFlags, orderingFromFlags, orderingWithBatch } from '../ordering-flags';
import { destinationIdSchema, ID_ARG } from './destination-args';
import { RECEIVER_FLAG_HELP, ReceiverFlags, receiverFromFlags } from '../receiver-flags';

/** `herald destinations add`: a destination's spec from its flags, PUT whole. */

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
    filter: z.string().optional(),
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
  filter: '--filter',
  policy: '--policy',
  failureMode: '--failure-mode',
  secret: '--secret',
  technicalEmail: '--technical-email',
  rateMin: '--rate-min',
  rateMax: '--rate-max',
  lane: '--lane',
};

export function registerAddDestination(group: Command, ctx: CommandContext): void {
  const add = group
    .command('add')
    .argument('<id>', 'destination id: lowercase letters, digits and hyphens')
    .description('create a destination, or replace the spec of an existing one (PUT /admin/destinations/<id>)')
    .option('--url <url>', 'webhook URL that receives the events (https; loopback allowed locally)')
    .option('--topic <topic>', 'Pub/Sub topic that receives the events, projects/P/topics/T, any project (instead of --url)')
    .option('--event-types <types>', 'comma-separated event types; a trailing * matches a prefix (default: all)')
    .option('--filter <cel>', 'a CEL expression over ce (attributes) and data (JSON) an event of those types must pass too, e.g. \'data.amount > 1000\' (default: every event of them)')
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
    .option('--ordering-on-failure <skip|block>', ORDERING_FLAG_HELP.onFailure)
    .option('--receiver <file>', RECEIVER_FLAG_HELP.receiver)
    .option('--signature <profile>', RECEIVER_FLAG_HELP.signature);
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
(--batch-*, --ordering, --rate-*, --lane, --policy, --filter …) sets that one back to its default, and
the note after the answer names each setting that changed that way.

With --ordering key, events that carry the CloudEvents partitionkey extension are sent one
at a time per key, in the order Herald accepted them (not with --batch-*). When a key's
event ends DEAD or QUEUED the key moves on (--ordering-on-failure skip, the default) or is
held (block) until that event is redelivered or the key skipped: see herald destinations
blocked-keys and skip-key. Adding the id again without --ordering turns ordering off.

--filter is checked when the destination is saved (an invalid one is refused with its line
and column); try one first with herald destinations filter-test <id> --filter '…'.

Examples:
  herald destinations add orders --url https://hooks.example.com/orders --event-types 'com.example.order.*'
  herald destinations add big-orders --url https://hooks.example.com/big --event-types com.example.order.created --filter 'data.amount > 1000 && ce.siteid == "42"'
  herald destinations add audit --topic projects/acme-audit/topics/herald-events
  herald destinations add bulk --url https://hooks.example.com/bulk --batch-max-events 100 --batch-max-wait-ms 2000
  herald destinations add ledger --url https://hooks.example.com/ledger --ordering key --ordering-on-failure block
  herald destinations add partner --url https://partner.example.com/hook --rate-max 20 --lane dedicated
  herald destinations add gh --url https://ci.example.com/hook --signature github --receiver receiver.json

--receiver's credentials are sealed at rest and never shown again; leaving --receiver out
keeps the destination's receiver settings, a null in the file removes one.`,
  );
  add.action(async (id: string) => {
    // Every problem at once: the id and the spec.
    const idResult = issuesOf(z.object({ id: destinationIdSchema }), { id }, ID_ARG);
    const { adminToken: _token, apiKey: _key, account: _account, batchMaxEvents, batchMaxWaitMs, batchMaxBytes, ordering, orderingOnFailure, receiver, signature, ...options } = add.opts<Record<string, unknown> & BatchFlags & OrderingFlags & ReceiverFlags>();
    const specResult = issuesOf(specFromOptions, options, SPEC_FLAGS);
    const batchResult = batchFromFlags({ batchMaxEvents, batchMaxWaitMs, batchMaxBytes });
    const orderingResult = orderingFromFlags({ ordering, orderingOnFailure });
    const receiverResult = receiverFromFlags({ receiver, signature });
    const both = batchResult.ok && batchResult.batch && orderingResult.ok && orderingResult.ordering ? [orderingWithBatch()] : [];
    if (!idResult.ok || !specResult.ok || !batchResult.ok || !orderingResult.ok || !receiverResult.ok || both.length > 0) {
      const issues = [idResult, specResult, batchResult, orderingResult, receiverResult].flatMap((r) => (r.ok ? [] : r.issues));
      throw usageError(add, [...issues, ...both]);
    }
    const destinationId = idResult.data.id;
    const spec = { ...specResult.data, ...receiverResult.receiver, ...(batchResult.batch ? { batch: batchResult.batch } : {}), ...(orderingResult.ordering ? { ordering: orderingResult.ordering } : {}) };
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
}
