import { Command, InvalidArgumentError } from 'commander';
import { formatLedger, totals } from './ledger';
import { formatUsage, formatViews, usageMismatches, viewsMismatches } from './views';
import { chaosOptionsChecked } from './scenario';
import { runChaos } from './run';

/** `npm run chaos -- --events 2000 --destinations 4 --kills 2 [--seed N]`: exits 1 when anything is lost, when ingest answered a 5xx other than 503 with Retry-After (or, without kills, when the views are not exact). */
const number = (value: string): number => {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n)) throw new InvalidArgumentError('must be a number');
  return n;
};

const program = new Command('chaos')
  .description("Kills Herald (SIGKILL) while it delivers, flaps receivers and pauses the Pub/Sub emulator; then checks that no accepted event was lost and, in a run without kills, that Herald's log and counts match what the receivers saw.")
  .option('--events <n>', 'events to publish', number)
  .option('--destinations <n>', 'destinations (healthy, flaky 503s, outage, slow — in turn)', number)
  .option('--kills <n>', 'SIGKILLs of Herald, each followed by a restart', number)
  .option('--seed <n>', 'seed of every random choice (replays a run); default random', number)
  .option('--rate <n>', 'events published per second', number)
  .option('--pauses <n>', 'pauses of the Pub/Sub emulator (SIGSTOP)', number)
  .option('--pause-seconds <n>', 'length of each pause', number)
  .option('--outage-seconds <n>', 'how long the outage receiver is down and the slow one slow', number)
  .option('--reconcile-after <n>', "seconds after ingest the reconciler checks an event (Herald's HERALD_RECONCILE_AFTER_MS); default 60, as in local mode", number)
  .option('--instances <n>', "instances of the functions in Herald's process, each with its own caches, each request to the next (npm start -- --instances N); default 1", number)
  .option('--quiet-timeout <n>', 'seconds to wait for every delivery to settle', number)
  .option('--per-post <n>', 'events per POST /ingest, as one CloudEvents batch (default 1): each destination gets its share of a request in one push', number)
  .option('--lose-replies <share>', "share of Firestore commits that land and then answer DEADLINE_EXCEEDED, as if the reply were lost (e.g. 0.05); default 0", number)
  .option('--batched', 'every destination takes batches (20 events or 500 ms)')
  .option('--rehearsal', 'Herald as npm run rehearse (each function its own process): each kill SIGKILLs one function process, and every process is restarted in turn with SIGTERM once')
  .option('--ordered', 'every destination ordered per key; events carry one of 10 partition keys; inversions among first receipts are counted (exit 1 if any)')
  .showHelpAfterError();

async function main(): Promise<void> {
  program.parse();
  const { batched, ordered, rehearsal, ...o } = program.opts<Record<string, number | undefined> & { batched?: boolean; ordered?: boolean; rehearsal?: boolean }>();
  const given = Object.fromEntries(
    Object.entries({
      events: o.events,
      destinations: o.destinations,
      kills: o.kills,
      seed: o.seed ?? Math.floor(Math.random() * 2 ** 31),
      rate: o.rate,
      pauses: o.pauses,
      pauseSeconds: o.pauseSeconds,
      outageSeconds: o.outageSeconds,
      quietTimeoutSeconds: o.quietTimeout,
      reconcileAfterSeconds: o.reconcileAfter,
      instances: o.instances,
      perPost: o.perPost,
      loseReplies: o.loseReplies,
      batched,
      ordered,
      rehearsal,
    }).filter(([, v]) => v !== undefined),
  );
  const parsed = chaosOptionsChecked.safeParse(given);
  if (!parsed.success) {
    process.stderr.write(`chaos: ${parsed.error.issues.map((i) => i.message).join('; ')}\n`);
    process.exit(2);
  }
  const result = await runChaos(parsed.data, (line) => process.stderr.write(`${line}\n`));
  const sum = totals(result.ledgers);
  // Exact only without kills: a killed process cannot record or count what its receiver saw.
  const judged = parsed.data.kills === 0;
  const mismatches = (result.views ?? []).flatMap((v) => viewsMismatches(v, result.plan.receivers.find((r) => r.destinationId === v.destinationId)?.behaviour !== undefined && ['outage', 'slow'].includes(result.plan.receivers.find((r) => r.destinationId === v.destinationId)!.behaviour)));
  const refusing = result.plan.receivers.some((r) => ['outage', 'slow'].includes(r.behaviour));
  const usageOff = result.usage ? usageMismatches(result.usage, refusing, parsed.data.batched === true) : { journal: [], killable: [] };
  process.stdout.write(
    [
      '',
      `seed ${result.seed}; ${result.instances} instance${result.instances === 1 ? '' : 's'}; ${result.accepted} events accepted (${result.unaccepted} never accepted); Herald started ${result.heraldStarts} times; kills at ${result.plan.kills.map((k) => `${(k / 1000).toFixed(1)} s`).join(', ') || 'none'}`,
      formatLedger(result.ledgers),
      `duplicates: ${sum.duplicates} of ${sum.expected} pairs (${((100 * sum.duplicates) / Math.max(1, sum.expected)).toFixed(2)} %)`,
      ...(result.views ? ['', "what Herald shows (its log and stats, read through the admin API):", formatViews(result.views), ...(mismatches.length === 0 ? ['views: exact'] : [`views${judged ? '' : ' (not judged: a kill loses what a process had not recorded)'}: ${mismatches.join('; ')}`]), ''] : []),
      ...(result.usage
        ? [
            formatUsage(result.usage),
            usageOff.journal.length === 0 ? 'usage from the journal (accepted, deliveries): exact' : `usage from the journal (accepted, deliveries): ${usageOff.journal.join('; ')}`,
            usageOff.killable.length === 0 ? 'usage from the flushes (delivered, attempts): exact' : `usage from the flushes (delivered, attempts)${judged ? '' : ' (not judged: a kill loses the counts a process had not flushed)'}: ${usageOff.killable.join('; ')}`,
          ]
        : []),
      `time to quiet: ${result.quietAfterMs === undefined ? 'not quiet' : `${(result.quietAfterMs / 1000).toFixed(1)} s after publishing ended`}`,
      `ingest answered: ${Object.entries(result.ingestAnswers.byStatus).map(([status, n]) => `${n} × ${status}`).join(', ') || 'nothing'}; ${result.ingestAnswers.unanswered} tries unanswered; ${result.ingestAnswers.bad5xx} 5xx other than 503 with Retry-After`,
      `lost: ${sum.lost}${sum.lost > 0 ? ` — e.g. ${result.ledgers.flatMap((l) => l.lostExamples).slice(0, 5).join('; ')}` : ''}`,
      ...(parsed.data.ordered ? [`inversions among first receipts: ${sum.inversions}`] : []),
      `Herald's log: ${result.logFile}`,
      '',
    ].join('\n'),
  );
  process.exit(sum.lost > 0 || sum.inversions > 0 || result.ingestAnswers.bad5xx > 0 || usageOff.journal.length > 0 || (judged && (mismatches.length > 0 || usageOff.killable.length > 0)) ? 1 : 0);
}

main().catch((e: unknown) => {
  process.stderr.write(`chaos: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(2);
});
