import { Command, Option } from 'commander';
import { Presets, SingleBar } from 'cli-progress';
import { z } from 'zod';
import { REPLAY_LIST } from '../../../shared/app/admin/replays-admin';
import { FINAL_STATUSES, REPLAY_ID, REPLAY_LIMITS, ReplayItem, ReplaySelection, ReplaySummary, ReplayView } from '../../../shared/domain/replay/replay';
import { HeraldClient } from '../client';
import { accountFlag, naming } from '../answers';
import { CommandContext, connectionOptions, validate } from '../context';
import { ApiError } from '../errors';
import { destinationIdSchema, table } from './destination-args';

/**
 * `herald replay`: asks Herald to replay dead letters (POST /admin/replays publishes the
 * trigger on the replay topic), follows the report with a progress bar (plain lines when
 * stderr is not a terminal) and prints it. `herald replays list|show` read reports.
 */

const DURATION = /^(\d{1,6})([smhd])$/;
const UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const TIME_MESSAGE = 'must be an ISO 8601 time with a zone (2026-11-23T14:00:00Z) or a time ago such as 90s, 30m, 2h, 7d';

/** An ISO time, or `30m` / `2h` / `7d` ago (from `now`). */
export function timeOption(now: () => number) {
  return z.string().transform((raw, ctx) => {
    const text = raw.trim();
    const ago = DURATION.exec(text);
    if (ago) return new Date(now() - Number(ago[1]) * UNIT_MS[ago[2] as keyof typeof UNIT_MS]).toISOString();
    const parsed = z.iso.datetime({ offset: true }).safeParse(text);
    if (parsed.success) return new Date(text).toISOString();
    ctx.addIssue({ code: 'custom', message: TIME_MESSAGE });
    return z.NEVER;
  });
}

const LIMIT_MESSAGE = `must be a whole number from 1 to ${REPLAY_LIMITS.maxLimit}`;
const positive = (message: string, max: number) => z.string().regex(/^\d{1,9}$/, message).transform(Number).pipe(z.number().int().min(1, message).max(max, message));

function replayOptionsSchema(now: () => number) {
  return z
    .object({
      destination: destinationIdSchema,
      since: timeOption(now),
      until: timeOption(now).optional(),
      type: z.array(z.string().min(1, 'must not be empty')).max(REPLAY_LIMITS.maxEventTypes, `at most ${REPLAY_LIMITS.maxEventTypes} types`).optional(),
      limit: positive(LIMIT_MESSAGE, REPLAY_LIMITS.maxLimit).optional(),
      dryRun: z.boolean().optional(),
      json: z.boolean().optional(),
      wait: z.boolean().optional(),
      timeout: positive('must be a whole number of seconds from 1 to 86400', 86_400).optional(),
      pollMs: positive('must be a whole number of milliseconds', 60_000).optional(),
    })
    .refine((o) => o.until === undefined || o.since <= o.until, { path: ['until'], message: 'must not be before --since' });
}

const FLAGS = { destination: '--destination', since: '--since', until: '--until', type: '--type', limit: '--limit', dryRun: '--dry-run', timeout: '--timeout', pollMs: '--poll-ms' };

const collect = (value: string, previous: string[] | undefined) => [...(previous ?? []), value];

const DEFAULT_TIMEOUT_S = 900;
const DEFAULT_POLL_MS = 1000;
/** A replay still queued after this long: the replay function has not picked its trigger up. */
const QUEUED_WARNING_MS = 30_000;

export function itemsTable(items: readonly ReplayItem[]): string {
  return table([
    ['DELIVERY ID', 'EVENT ID', 'TYPE', 'DESTINATION', 'DEAD-LETTERED AT', 'OUTCOME'],
    ...items.map((i) => [i.deliveryId ?? '-', i.eventId ?? '-', i.eventType ?? '-', i.destination ?? '-', i.deadLetteredAt, i.reason ? `${i.outcome} (${i.reason})` : i.outcome]),
  ]);
}

/** `replay <id> done: 3 matched, 3 redelivered, 0 skipped, 0 failed`. */
export function replayLine(r: ReplaySummary): string {
  const sent = r.dryRun ? `${r.wouldRedeliver} would be redelivered` : `${r.redelivered} redelivered`;
  return `replay ${r.id} ${r.status}${r.dryRun ? ' (dry run)' : ''}: ${r.matched} matched, ${sent}, ${r.skipped} skipped, ${r.failed} failed`;
}

/** What `herald replay` prints when the replay has ended (stdout), and what people read (stderr). */
function printReport(ctx: CommandContext, report: ReplayView, json: boolean, account: string | undefined): void {
  if (json) ctx.json(report);
  else {
    ctx.out(replayLine(report));
    if (report.items.length > 0) ctx.out(itemsTable(report.items));
    if (report.itemsOmitted > 0) ctx.out(`(${report.itemsOmitted} more not listed)`);
  }
  const skipped = Object.entries(report.skippedBy).map(([reason, n]) => `${n} ${reason}`);
  if (skipped.length > 0) ctx.note(`skipped: ${skipped.join(', ')} (the items say why; not-replayable, no-record and deleted destinations stay on the dead-letter topic)`);
  if (report.status === 'incomplete') ctx.note('the replay ran out of time before reading every dead letter: run the same command again to continue');
  if (report.dryRun && report.status === 'done') ctx.note('dry run: nothing was redelivered or removed; run the command without --dry-run to replay');
  if (!report.dryRun && report.redelivered > 0) ctx.note(`the retry pump sends them at each destination's rate; follow them with: herald deliveries list ${report.request.destination ?? '<destination>'}${accountFlag(account)}`);
}

interface Progress {
  update(r: ReplayView): void;
  stop(): void;
}

/** A cli-progress bar on a terminal; otherwise a line whenever the counts change. */
function progressFor(ctx: CommandContext, id: string, limit: number | undefined): Progress {
  const stderr = ctx.io.stderr as { isTTY?: boolean; cursorTo?: unknown };
  if (stderr.isTTY === true && typeof stderr.cursorTo === 'function') {
    const bar = new SingleBar(
      {
        stream: ctx.io.stderr as NodeJS.WritableStream,
        format: `replay ${id} {status} [{bar}] {value}/{total} ${limit !== undefined ? 'of the limit' : 'matched of read'} | {redelivered} redelivered, {skipped} skipped, {failed} failed`,
        hideCursor: true,
      },
      Presets.shades_classic,
    );
    bar.start(limit ?? 1, 0, { status: 'queued', redelivered: 0, skipped: 0, failed: 0 });
    return {
      update: (r) => {
        bar.setTotal(limit ?? Math.max(1, r.scanned));
        bar.update(r.matched, { status: r.status, redelivered: r.dryRun ? r.wouldRedeliver : r.redelivered, skipped: r.skipped, failed: r.failed });
      },
      stop: () => bar.stop(),
    };
  }
  let last = '';
  return {
    update: (r) => {
      const line = `replay ${r.id}: ${r.status} — ${r.scanned} read, ${r.matched} matched, ${r.dryRun ? `${r.wouldRedeliver} would be redelivered` : `${r.redelivered} redelivered`}, ${r.skipped} skipped, ${r.failed} failed`;
      if (line !== last) ctx.note(line);
      last = line;
    },
    stop: () => undefined,
  };
}

/** Polls the report until the replay has ended (or `timeoutMs` has passed). */
async function follow(ctx: CommandContext, client: HeraldClient, id: string, options: { timeoutMs: number; pollMs: number; limit?: number; account?: string }): Promise<ReplayView> {
  const progress = progressFor(ctx, id, options.limit);
  const start = Date.now();
  let warned = false;
  try {
    for (;;) {
      const report = await client.getReplay(id);
      progress.update(report);
      if (FINAL_STATUSES.has(report.status)) return report;
      const waited = Date.now() - start;
      if (!warned && report.status === 'queued' && waited > QUEUED_WARNING_MS) {
        warned = true;
        ctx.note(`replay ${id} is still queued after ${Math.round(waited / 1000)} s: is the replay function running (subscription <prefix>-replay-trigger)?`);
      }
      if (waited > options.timeoutMs) {
        throw new ApiError(200, `replay ${id} has not ended after ${Math.round(options.timeoutMs / 1000)} s (it is ${report.status})`, [], `it goes on in Herald; follow it with: herald replays show ${id}${accountFlag(options.account)}`);
      }
      await new Promise((resolve) => setTimeout(resolve, options.pollMs));
    }
  } finally {
    progress.stop();
  }
}

export function registerReplay(program: Command, ctx: CommandContext): void {
  const replay = program
    .command('replay')
    .description("replay dead letters: send each selected dead delivery again, only to the destination that failed it")
    .requiredOption('--destination <id>', 'the destination whose dead letters to replay')
    .requiredOption('--since <time>', 'dead-lettered at or after this time: ISO 8601 (2026-11-23T14:00:00Z) or ago (30m, 2h, 7d)')
    .option('--until <time>', 'dead-lettered before this time (default: now)')
    .option('--type <type>', 'only this event type, or a prefix ending in * (repeat for several)', collect)
    .option('--limit <n>', `replay at most n dead letters (1-${REPLAY_LIMITS.maxLimit})`)
    .option('--dry-run', 'list what would be replayed; change nothing')
    .option('--json', 'print the final report as JSON')
    .option('--no-wait', 'print the replay id and return at once (follow it with herald replays show <id>)')
    .option('--timeout <seconds>', `stop following after this long (default ${DEFAULT_TIMEOUT_S}); the replay goes on`)
    .addOption(new Option('--poll-ms <ms>', 'how often to read the report').hideHelp());
  connectionOptions(replay, 'admin');
  replay.addHelpText(
    'after',
    `
The window is on the time each message reached the dead-letter topic; --until is
exclusive. A replayed delivery starts over (a fresh retry budget) and is sent by the
retry pump at the destination's rate; a suspended destination gets it QUEUED until it is
reactivated. Replaying the same window again sends nothing twice.

Examples:
  herald replay --destination orders --since 2h --dry-run
  herald replay --destination orders --since 2026-11-23T14:00:00Z --until 2026-11-23T15:00:00Z --type 'com.example.order.*'`,
  );
  replay.action(async () => {
    const { adminToken: _token, apiKey: _key, account: _account, url: _url, ...raw } = replay.opts<Record<string, unknown>>();
    const input = validate(replayOptionsSchema(() => Date.now()), raw, FLAGS, replay);
    const { client, account } = ctx.connect(replay, 'admin');
    const request: ReplaySelection = {
      destination: input.destination,
      since: input.since,
      ...(input.until !== undefined ? { until: input.until } : {}),
      ...(input.type !== undefined ? { eventTypes: input.type } : {}),
      ...(input.limit !== undefined ? { limit: input.limit } : {}),
      ...(input.dryRun ? { dryRun: true } : {}),
    };
    const accepted = await client.startReplay(request);
    if (input.wait === false) {
      if (input.json) ctx.json(accepted);
      else ctx.out(accepted.id);
      ctx.note(`replay ${accepted.id} queued; follow it with: herald replays show ${accepted.id}${accountFlag(account)}`);
      return;
    }
    const report = await follow(ctx, client, accepted.id, {
      timeoutMs: (input.timeout ?? DEFAULT_TIMEOUT_S) * 1000,
      pollMs: input.pollMs ?? DEFAULT_POLL_MS,
      ...(input.limit !== undefined ? { limit: input.limit } : {}),
      ...(account !== undefined ? { account } : {}),
    });
    printReport(ctx, report, input.json === true, account);
    if (report.status === 'failed' || report.status === 'rejected') {
      throw new ApiError(200, `replay ${report.id} ${report.status}: ${report.error ?? 'see the report'}`, report.issues ?? [], "Herald's log has the details; fix the cause and run the command again");
    }
  });

  const group = program.command('replays').description('replay reports: what each replay did');
  const list = group
    .command('list')
    .description('the latest replays, newest first')
    .option('--limit <n>', `how many (1-${REPLAY_LIST.maxLimit}, default ${REPLAY_LIST.defaultLimit})`)
    .option('--json', 'print {"replays": [...]}');
  connectionOptions(list, 'admin');
  list.action(async () => {
    const { adminToken: _token, apiKey: _key, account: _account, url: _url, ...raw } = list.opts<Record<string, unknown>>();
    const input = validate(z.object({ limit: positive(`must be a whole number from 1 to ${REPLAY_LIST.maxLimit}`, REPLAY_LIST.maxLimit).optional(), json: z.boolean().optional() }), raw, {}, list);
    const { client, account } = ctx.connect(list, 'admin');
    const replays = await client.listReplays(input.limit);
    if (input.json) ctx.json({ replays });
    else if (replays.length === 0) ctx.note(`no replays yet${account === undefined ? '' : ` in account ${account}`}`);
    else {
      ctx.out(
        table([
          ['ID', 'STATUS', 'DESTINATION', 'CREATED AT', 'MATCHED', 'REDELIVERED', 'SKIPPED', 'FAILED'],
          ...replays.map((r) => [r.id, r.dryRun ? `${r.status} (dry run)` : r.status, r.request.destination ?? '(all)', r.createdAt, String(r.matched), String(r.dryRun ? r.wouldRedeliver : r.redelivered), String(r.skipped), String(r.failed)]),
        ]),
      );
    }
  });

  const show = group.command('show').argument('<id>', 'replay id').description('one replay report as JSON');
  connectionOptions(show, 'admin');
  show.action(async (id: string) => {
    const input = validate(z.object({ id: z.string().regex(REPLAY_ID, 'a replay id is 1-64 letters, digits, "_" or "-", as herald replay printed it') }), { id }, { id: '<id>' }, show);
    const { client, account } = ctx.connect(show, 'admin');
    const report = await naming(() => client.getReplay(input.id), { what: `no replay ${JSON.stringify(input.id)}`, hint: `see the replays there are with: herald replays list${accountFlag(account)}` });
    ctx.json(report);
    ctx.note(replayLine(report));
  });
}
