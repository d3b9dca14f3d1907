import { DeliveryStatus, LastError } from '../../domain/retry/delivery';
import { transition } from '../../domain/retry/delivery-state';
import { Destination, deliveryPolicyOf, PolicySettings } from '../../domain/destinations/destination';
import { ThresholdPolicy } from '../../domain/retry/delivery-policy';
import { thresholdVerdict } from '../../domain/stats/success-rate';
import { reactivate, suspend, SuspensionCause, suspendManually } from '../../domain/destinations/suspension';
import { Clock, Logger } from '../../ports/clock';
import { DeliveryStore } from '../../ports/deliveries';
import { DestinationStore } from '../../ports/destinations';
import { MessageBus } from '../../ports/messaging';
import { DestinationDirectory } from '../destinations/destination-directory';
import { DestinationCounters } from '../destinations/destination-counters';
import { RateSummary } from '../../domain/stats/success-rate';
import { Metrics } from '../../ports/telemetry';
import { forEachLimited } from '../support/for-each-limited';
import { failingNotice, OperationalEmitter, operationalEventId, reactivatedNotice, suspendedNotice } from '../../domain/operational/operational-events';
import { failingChange, failingMeasure, FailingState } from '../../domain/operational/failing-level';
import { publishSuspensionEmail } from '../operational/suspension-email';

/** Destinations the check looks up at once (the directory answers most from memory), and suspends at once. */
const LOOKUP_CONCURRENCY = 32;
const SUSPEND_CONCURRENCY = 8;

export interface SuspensionDeps {
  destinations: DestinationStore;
  deliveries: DeliveryStore;
  directory: DestinationDirectory;
  counters: DestinationCounters;
  bus: MessageBus;
  notificationsTopic: string;
  clock: Clock;
  log: Logger;
  policy: PolicySettings;
  /** Herald's own metrics; absent: none recorded. */
  metrics?: Metrics;
  /** Announces failing, suspended and reactivated destinations (docs/operational-events.md); absent: only the suspension email goes out. */
  operational?: OperationalEmitter;
  /** The fractions of the threshold's failure rate announced as `failing` (HERALD_OPERATIONAL_FAILING_FRACTIONS); absent or empty: none. */
  failingFractions?: readonly number[];
}

/**
 * Suspends the destination (once: a destination already suspended is left as it is) and
 * publishes the notification on the notifications topic. Resolves with the suspended
 * destination, or undefined if it was already suspended or is gone.
 */
export async function suspendDestination(
  deps: Omit<SuspensionDeps, 'deliveries' | 'policy'>,
  destinationId: string,
  why: { cause: SuspensionCause; reason: string; lastError?: LastError },
  /** The rolling hour when the caller has it already (the check): not read again. */
  hour?: RateSummary,
): Promise<Destination | undefined> {
  const window = hour ?? (await deps.counters.window(destinationId));
  const at = deps.clock.now();
  const suspended = await deps.destinations.update(destinationId, (current) => current && suspend(current, { ...why, at, window }));
  if (!suspended) return undefined;
  await announce(deps, destinationId, suspended);
  return suspended;
}

/**
 * A suspension by hand (POST /admin/destinations/{id}/suspend): the same state, log line and
 * notification as an automatic one, with cause `manual` and who did it. Resolves with the
 * suspended destination, the refusal when it already was suspended, or undefined if it does not exist.
 */
export async function suspendDestinationByHand(
  deps: Omit<SuspensionDeps, 'deliveries' | 'policy'>,
  destinationId: string,
  request: { by: string; reason?: string },
): Promise<Destination | { refused: string } | undefined> {
  const window = await deps.counters.window(destinationId);
  let refused: string | undefined;
  const suspended = await deps.destinations.update(destinationId, (current) => {
    refused = undefined;
    if (!current) return undefined;
    const result = suspendManually(current, { ...request, window }, deps.clock);
    if (result.ok) return result.destination;
    refused = result.message;
    return undefined;
  });
  if (!suspended) return refused === undefined ? undefined : { refused };
  await announce(deps, destinationId, suspended);
  return suspended;
}

/** A suspension written: caches told, an ERROR line logged, the notification published. */
async function announce(deps: Omit<SuspensionDeps, 'deliveries' | 'policy'>, destinationId: string, suspended: Destination): Promise<void> {
  deps.directory.changed(destinationId, suspended);
  const s = suspended.suspension!;
  const notification = s.notification;
  const fields = { destinationId, cause: s.cause, reason: s.reason, ...(s.by === undefined ? {} : { by: s.by }), notifyTo: notification.to ?? '(no technicalEmail)', successRate1h: notification.successRate1h, attempts1h: notification.attempts1h };
  deps.log.error(`destination suspended: ${s.reason}`, fields);
  deps.metrics?.add('suspensions', 1);
  // The email (docs/suspension.md#notification) goes out whatever becomes of the operational event (app/operational), naming it when there is one.
  const notice = deps.operational ? suspendedNotice({ ...suspended, suspension: s }) : undefined;
  await Promise.all([publishSuspensionEmail(deps.bus, deps.notificationsTopic, notification, deps.log, notice && operationalEventId(notice)), notice && deps.operational?.emit(notice)]);
}

export interface ThresholdReport {
  checked: number;
  suspended: string[];
}

/**
 * The scheduled suspension check: every active destination with attempts since the last run
 * whose policy has a threshold is judged on its rolling window by the pure rule, and
 * suspended below it. Only those: a destination's success rate moves with its attempts, so
 * one idle since the last check has its verdict already, and a deployment of 100,000
 * mostly quiet destinations costs reads for the busy ones alone. Each is judged on its
 * rollup and the counters after it, which the same run folds (DestinationCounters.foldRecent):
 * about three reads a busy destination, all of them in parallel, so the last in sort order is
 * judged as surely as the first. (A window that drops below its threshold only by ageing,
 * with no new attempt, is judged at its next attempt.)
 */
export async function checkThresholds(deps: SuspensionDeps): Promise<ThresholdReport & { active: number; folded: number }> {
  // The windows include this process's unflushed counts: no flush needed (nor wanted: one writer, one flush per flushMs).
  const run = await deps.counters.foldRecent();
  const judged: { id: string; threshold: ThresholdPolicy; destination: Destination }[] = [];
  await forEachLimited(run.active, LOOKUP_CONCURRENCY, async (id) => {
    const destination = await deps.directory.get(id);
    if (destination?.status !== 'active') return;
    const threshold = deliveryPolicyOf(destination, deps.policy).threshold;
    if (threshold) judged.push({ id: destination.id, threshold, destination });
  });
  const windows = await run.windows(judged.map((j) => ({ destinationId: j.id, windowMs: j.threshold.windowMs })));
  const failing = judged.flatMap(({ id, threshold }) => {
    const verdict = thresholdVerdict(windows.get(id)!, threshold);
    return verdict.suspend ? [{ id, reason: verdict.reason, hour: threshold.windowMs === deps.counters.hourMs ? windows.get(id) : undefined }] : [];
  });
  const suspended: string[] = [];
  await forEachLimited(failing, SUSPEND_CONCURRENCY, async ({ id, reason, hour }) => {
    if (await suspendDestination(deps, id, { cause: 'threshold', reason }, hour)) suspended.push(id);
  });
  const suspending = new Set(failing.map((f) => f.id));
  await warnFailing(deps, judged.filter((j) => !suspending.has(j.id)), windows);
  return { checked: judged.length, suspended: suspended.sort(), active: run.active.length, folded: run.folded };
}

/**
 * The early warning (`herald.destination.failing`, domain/operational/failing-level.ts): a judged
 * destination whose failure rate reached a higher fraction of its threshold's than it was last
 * announced at is announced once; one back below every fraction is cleared, to be announced at its
 * next crossing. The state lives on the destination beside its suspension, written only when it
 * changes: a destination that stays where it is costs nothing more than its judging.
 */
async function warnFailing(deps: SuspensionDeps, judged: readonly { id: string; threshold: ThresholdPolicy; destination: Destination }[], windows: ReadonlyMap<string, RateSummary>): Promise<void> {
  const fractions = deps.failingFractions ?? [];
  if (fractions.length === 0) return;
  const now = deps.clock.now();
  await forEachLimited(judged, SUSPEND_CONCURRENCY, async ({ id, threshold, destination }) => {
    const counts = windows.get(id)!;
    const measure = failingMeasure(counts, threshold, fractions);
    // Judged on the directory's copy first: no read when nothing changes.
    if (failingChange(destination.failing, measure, now).kind === 'none') return;
    let crossed: FailingState | undefined;
    const written = await deps.destinations.update(id, (current) => {
      crossed = undefined;
      if (current?.status !== 'active') return undefined;
      const change = failingChange(current.failing, measure, now);
      if (change.kind === 'none') return undefined;
      if (change.kind === 'recovered') {
        const { failing: _recovered, ...rest } = current;
        return rest;
      }
      crossed = change.state;
      return { ...current, failing: change.state };
    });
    if (!written) return;
    deps.directory.changed(id, written);
    if (crossed) {
      deps.log.warn(`destination failing: failure rate ${(measure.failureRate * 100).toFixed(1)} % is ${crossed.fraction * 100} % of the ${(measure.suspendAboveFailureRate * 100).toFixed(1)} % that suspends it`, { destinationId: id, fraction: crossed.fraction });
      await deps.operational?.emit(failingNotice(written, crossed, measure, counts, threshold));
    }
  });
}

/** Clears the suspension; undefined if the destination does not exist, 'active' if it was not suspended. */
export async function reactivateDestination(deps: Omit<SuspensionDeps, 'deliveries' | 'policy'>, destinationId: string): Promise<Destination | 'active' | undefined> {
  let found: Destination | undefined;
  const written = await deps.destinations.update(destinationId, (current) => {
    found = current;
    return current && reactivate(current, deps.clock.now());
  });
  if (!written) return found ? 'active' : undefined;
  deps.directory.changed(destinationId, written);
  deps.log.info('destination reactivated', { destinationId });
  deps.metrics?.add('reactivations', 1);
  await deps.operational?.emit(reactivatedNotice(written, written.reactivatedAt!, found?.suspension));
  return written;
}

const PAGE = 100;

/**
 * Every delivery of the destination in `status` (QUEUED or DEAD) starts over: PENDING, due
 * now, with a fresh retry budget. The retry pump then sends them through the lane, at most
 * a pump batch a round. Resolves with how many were redelivered.
 */
export async function redeliverAll(deps: Pick<SuspensionDeps, 'deliveries' | 'clock' | 'log'>, destinationId: string, status: Extract<DeliveryStatus, 'QUEUED' | 'DEAD'>): Promise<number> {
  let count = 0;
  let cursor: string | undefined;
  do {
    const page = await deps.deliveries.list(destinationId, { status, limit: PAGE, ...(cursor ? { cursor } : {}) });
    const now = deps.clock.now();
    const done = await Promise.all(
      page.deliveries.map((r) =>
        deps.deliveries.update(r.id, (current) => {
          if (current?.status !== status) return undefined;
          const next = transition(current, { type: 'redeliver', now });
          return next.ok ? next.state : undefined;
        }),
      ),
    );
    count += done.filter(Boolean).length;
    cursor = page.nextCursor;
  } while (cursor);
  if (count > 0) deps.log.info(`${count} ${status} deliveries redelivered`, { destinationId, count, from: status });
  return count;
}
