import { DeliveryRecord } from '../../domain/retry/delivery';
import { transition } from '../../domain/retry/delivery-state';
import { Clock, Logger } from '../../ports/clock';
import { DeferredAdvancer } from '../../ports/rate';
import { DeliveryStore } from '../../ports/deliveries';
import { DestinationStore } from '../../ports/destinations';
import { LaneProvisioner, MessageBus } from '../../ports/messaging';
import { OrderedKeyStore } from '../../ports/ordered-keys';
import { TopologyNames } from '../../topology';
import { sendDeadLetter } from '../lanes/dead-letter';
import { DestinationDirectory } from '../destinations/destination-directory';
import { queuedBecauseSuspended } from '../../domain/destinations/suspension';
import { updateUnderClaim } from '../delivery/claimed-update';
import { publishBundled, publishToLane } from '../lanes/lanes';
import { Destination } from '../../domain/destinations/destination';
import { LaneMessage } from '../../domain/intake/lane-message';
import { recheckQueued } from '../delivery/queued-recheck';
import { Metrics } from '../../ports/telemetry';
import type { OperationalEmitter } from '../../domain/operational/operational-events';
import { afterOrderedOutcome, resequenceOrdered } from '../ordering/ordered-delivery';
import { inPumpClaimSpan } from '../tracing/spans';

export interface PumpDeps {
  bus: MessageBus;
  lanes: LaneProvisioner;
  names: TopologyNames;
  directory: DestinationDirectory;
  /** The registry itself, read fresh where the directory's view may be stale (a delivery queued as its destination is deleted). */
  destinations?: Pick<DestinationStore, 'get'>;
  deliveries: DeliveryStore;
  deadLetterTopic: string;
  clock: Clock;
  log: Logger;
  claimTtlMs: number;
  /** Deliveries taken per round. */
  batchSize: number;
  /** Ordered destinations' keys: a redelivered ordered delivery gets its place again before it goes (app/ordering/ordered-delivery.ts). */
  keys?: OrderedKeyStore;
  /** Herald's own metrics; absent: none recorded. */
  metrics?: Metrics;
  /** Announces a death the pump decides (`herald.delivery.dead`), as a first attempt's is; absent: nobody is told but the dead-letter topic. */
  operational?: OperationalEmitter;
}

export interface PumpReport {
  /** Due deliveries found. */
  due: number;
  /** Of those, claimed and sent to their lanes. */
  sent: number;
  /** Claimed by another pump first, or no longer due. */
  skipped: number;
  /** Their destination is gone: DEAD, onto the dead-letter topic. */
  abandoned: number;
  /** Their destination is suspended: QUEUED, not sent. */
  queued: number;
}

/**
 * One round of the retry pump: every due delivery (PENDING whose availableAt has come, or
 * IN_FLIGHT whose claim expired) is claimed and its event published to the destination's
 * lane with the claim, where `deliver` attempts it. A pump that dies after claiming loses
 * nothing: the claim expires and a later round takes the delivery again.
 */
export async function pumpOnce(deps: PumpDeps): Promise<PumpReport> {
  const now = deps.clock.now();
  const ids = await deps.deliveries.due(now, new Date(now.getTime() - deps.claimTtlMs), deps.batchSize);
  const report = await claimAndDispatch(deps, ids, now, false);
  if (report.due > 0) deps.log.debug('retry pump round', { ...report });
  return report;
}

/**
 * Claimed deliveries bound for a pushed destination's retry lane, gathered over a round: one
 * bundle a destination (app/delivery/deliver.ts deliverPush attempts each member under its own
 * claim), so a round of 100 is a few pushes, not 100. A lane's pushes are few at a time (two on
 * the emulator), and one claimed retry a push, each holding its slot for its claim, its rate
 * turn and its attempt, drained at 1–2 a second per destination on a loaded machine (issue 51):
 * the claims of a backlog expired (HERALD_CLAIM_TTL_MS) before their messages were pushed, the
 * pump claimed them again, and the lane filled with messages whose claims had moved on.
 */
type LaneLoad = Map<string, { destination: Destination; messages: LaneMessage[] }>;

/** Claims each delivery (before its time, with `early`, if rate control deferred it) and sends the claimed ones to their lanes. */
async function claimAndDispatch(deps: PumpDeps, ids: readonly string[], now: Date, early: boolean): Promise<PumpReport> {
  const report: PumpReport = { due: ids.length, sent: 0, skipped: 0, abandoned: 0, queued: 0 };
  const failures: string[] = [];
  const load: LaneLoad = new Map();
  await Promise.all(
    ids.map(async (id) => {
      try {
        const claimed = await deps.deliveries.update(id, (current) => {
          if (!current) return undefined;
          const next = transition(current, { type: 'claim', now, claimTtlMs: deps.claimTtlMs, early });
          return next.ok ? next.state : undefined;
        });
        if (!claimed) {
          report.skipped++;
          return;
        }
        if (!early && claimed.availableAt !== undefined) deps.metrics?.record('pumpLag', Math.max(0, now.getTime() - Date.parse(claimed.availableAt)));
        const outcome = await inPumpClaimSpan(claimed, () => dispatch(deps, claimed, load));
        if (outcome !== 'gathered') report[outcome]++;
      } catch (e) {
        // One delivery's fault (a transaction that aborted) must not cost the round the others:
        // this one is claimed again once its claim expires, or found due again next round.
        report.skipped++;
        failures.push((e as Error).message);
      }
    }),
  );
  await Promise.all(
    [...load.values()].map(async ({ destination, messages }) => {
      try {
        await publishBundled(deps, destination, messages);
        report.sent += messages.length;
        deps.log.debug('due deliveries sent to their lane', { destinationId: destination.id, deliveries: messages.length });
      } catch (e) {
        // Not lost: their claims expire and a later round takes them again.
        report.skipped += messages.length;
        failures.push((e as Error).message);
      }
    }),
  );
  if (failures.length > 0) deps.log.warn(`retry pump: ${failures.length} due deliveries failed this round; they are taken again later`, { failed: failures.length, error: failures[0] });
  return report;
}

/** What bringing deferred deliveries forward came to: `drained` when fewer were left than asked for. */
export interface BroughtForward extends PumpReport {
  drained: boolean;
}

/**
 * Rate control's grant (domain/rate/rate-advance.ts advanceGrant): up to `count` of the
 * destination's rate-deferred deliveries, earliest first, claimed now and sent to its lane,
 * where they wait for the turns that would otherwise go unused. A retry waiting for its time
 * is never among them. As a pump round, for one destination, before the deliveries' times.
 */
export async function bringForward(deps: PumpDeps, destinationId: string, count: number): Promise<BroughtForward> {
  const now = deps.clock.now();
  const ids = await deps.deliveries.rateDeferred(destinationId, count);
  const report = await claimAndDispatch(deps, ids, now, true);
  deps.log.debug('deferred deliveries brought forward: turns of their destination were going unused', { destinationId, granted: count, ...report });
  return { ...report, drained: ids.length < count };
}

/**
 * The retry pump as the delivery limiter's DeferredAdvancer: a grant carried out as `bringForward`
 * does. `deps` is asked for at each grant (the runtime that holds the limiter builds them).
 */
export function deferredAdvancer(deps: () => PumpDeps): DeferredAdvancer {
  return { bringForward: (destinationId, count) => bringForward(deps(), destinationId, count) };
}

/** What becomes of a claimed delivery: DEAD, QUEUED, placed again in its key, or gathered for its lane (`load`), a pushed destination's bundled with the round's others. */
async function dispatch(deps: PumpDeps, record: DeliveryRecord, load: LaneLoad): Promise<'sent' | 'abandoned' | 'queued' | 'gathered'> {
  const ids = { eventId: record.eventId, eventSource: record.eventSource, destinationId: record.destinationId, deliveryId: record.id };
  const destination = await deps.directory.get(record.destinationId);
  if (!destination || !record.event) {
    const reason = !destination ? 'the destination no longer exists' : 'the record holds no event to send';
    const dead = await updateUnderClaim(deps.deliveries, record.id, record.claimedAt, { type: 'abandon', reason, now: deps.clock.now() });
    if (dead && record.event) await sendDeadLetter(deps, record.event, dead);
    deps.log.error(`delivery abandoned: ${reason}`, ids);
    return 'abandoned';
  }
  if (destination.status === 'suspended') {
    const queued = await updateUnderClaim(deps.deliveries, record.id, record.claimedAt, { type: 'queue', now: deps.clock.now(), reason: queuedBecauseSuspended(destination) });
    deps.log.info('due delivery QUEUED: its destination is suspended', ids);
    if (queued && deps.destinations) await recheckQueued({ ...deps, destinations: deps.destinations }, queued, 'suspended');
    if (queued) await afterOrderedOutcome(deps, destination, queued, true);
    return 'queued';
  }
  if (record.order?.again && deps.keys) {
    await resequenceOrdered({ ...deps, keys: deps.keys }, destination, record);
    return 'sent';
  }
  const message: LaneMessage = { kind: 'claimed', destinationId: record.destinationId, event: record.event, claim: record.claimedAt!, ...(record.publishedAt ? { publishedAt: record.publishedAt } : {}), ...(record.batch ? { batch: record.batch } : {}) };
  // A batched destination's retries go to its batcher one message each, as before.
  if (destination.batch === undefined) {
    const gathered = load.get(destination.id) ?? { destination, messages: [] };
    gathered.messages.push(message);
    load.set(destination.id, gathered);
    return 'gathered';
  }
  await publishToLane(deps, destination, message);
  deps.log.debug('due delivery sent to its lane', { ...ids, attempts: record.attempts, claimedAt: record.claimedAt });
  return 'sent';
}

/** Whether any delivery will be due within `ms` (a PENDING one whose time comes, or a claim that expires). */
async function dueBefore(deps: PumpDeps, ms: number): Promise<boolean> {
  const horizon = deps.clock.now().getTime() + ms;
  const ids = await deps.deliveries.due(new Date(horizon), new Date(horizon - deps.claimTtlMs), 1);
  return ids.length > 0;
}

export interface PumpLoop {
  stop(): Promise<void>;
}

export interface PumpRunOptions {
  intervalMs: number;
  /** Stop after this long (after one round at least); absent: run until stopped. */
  untilMs?: number;
  /**
   * With `untilMs`: keep polling to the end even when nothing will fall due before it.
   * Off, a run ends as soon as no delivery is due before its end — a scheduled pump on an
   * idle Herald costs a few reads and ~100 ms a minute instead of a busy function.
   */
  hold?: boolean;
  onRound?: (r: PumpReport) => void;
}

/** Why a run ended. */
export type PumpEnd = 'stopped' | 'time-up' | 'idle';

/**
 * Rounds every `intervalMs` until stopped (local mode), or until `untilMs` has passed or,
 * unless `hold`, nothing is due before then (the scheduled `pump` function on GCP, started
 * each minute). One round at least. A failed round is logged and the next one tries again.
 */
export function runPump(deps: PumpDeps, options: PumpRunOptions): PumpLoop & { done: Promise<PumpReport & { ended: PumpEnd }> } {
  let stopped = false;
  let wake: (() => void) | undefined;
  const total: PumpReport = { due: 0, sent: 0, skipped: 0, abandoned: 0, queued: 0 };
  const start = Date.now();
  const done = (async () => {
    const timeLeft = () => (options.untilMs === undefined ? Infinity : options.untilMs - (Date.now() - start));
    let ended: PumpEnd = 'stopped';
    while (!stopped) {
      let again = false;
      let idle = false;
      try {
        const round = await pumpOnce(deps);
        for (const k of Object.keys(total) as (keyof PumpReport)[]) total[k] += round[k];
        options.onRound?.(round);
        // A full batch means more is due: go again at once.
        again = round.due >= deps.batchSize;
        if (!again && options.untilMs !== undefined && !options.hold) idle = !(await dueBefore(deps, timeLeft()));
      } catch (e) {
        deps.log.error('retry pump round failed; trying again next round', { error: (e as Error).message });
      }
      if (stopped) break;
      if (timeLeft() <= 0) {
        ended = 'time-up';
        break;
      }
      if (idle) {
        ended = 'idle';
        break;
      }
      if (again) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(options.intervalMs, timeLeft()));
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    return { ...total, ended };
  })();
  return {
    done,
    async stop() {
      stopped = true;
      wake?.();
      await done;
    },
  };
}
