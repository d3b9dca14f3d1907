import { AttemptResult } from '../../domain/retry/delivery';
import { attemptFeedback } from '../../domain/rate/rate-feedback';
import { mergeCounts, RateBounds } from '../../domain/rate/rate-doc';
import { addDeferred, nextDeferCursor, nextTurn } from '../../domain/rate/rate-turns';
import { leaseShowsThrottle, takeSendMode, throttled, withdrawSend } from '../../domain/rate/unleased-sends';
import { Clock, Logger } from '../../ports/clock';
import { DeferredAdvancer, RateLeaseStore } from '../../ports/rate';
import { countsAt, DestinationPace, Waiter } from './destination-pace';
import { LimiterPaces, MIN_LEASE_GAP_MS } from './limiter-paces';
import { AcquireOptions, BeforeTurn, Gate, LimiterClosedError } from './limiter-gate';
import { Metrics } from '../../ports/telemetry';
import { countLimited, defer, leave, waitAt } from './pace-turns';

const FORGET_IN_FLIGHT_MS = 30_000;
/** Unleased, the counts still to be reported are kept this long: a first lease judges the last few seconds only (rate-control.ts). */
const KEEP_UNREPORTED_MS = 60_000;
const DEFER_WINDOW_MS = 3000;

/**
 * Enforces each destination's adaptive rate across every process that delivers to it. This
 * process leases its turns on the destination's grid from the shared controller (one
 * document, a lease about once per span: the document takes about one write a second) and
 * sends in its turns only, one caller at a time, in arrival order (of those ready). A caller
 * that would wait longer than its limit is told to defer instead, to a time after the
 * destination's deferrals so far (every process's, through the lease), a turn of the rate
 * apart: deferred deliveries come back about as fast as they can be sent. One told to wait
 * and still waiting at its limit is deferred then.
 *
 * Nothing is granted ahead: when a lease lowers the rate, the very next turn is on the new
 * grid (slots handed out in advance would keep going out at the old rate and draw 429s).
 * The other way round, when the rate rises past the work in hand while deliveries wait
 * deferred at the spacing of a lower rate, a lease grants this process the turns no sender
 * has work for and it brings that many deferred deliveries forward (the DeferredAdvancer port: app/retry/pump.ts
 * deferredAdvancer).
 * Each attempt's outcome is counted under the second it started in and travels with the
 * next lease, so feedback costs no write of its own.
 *
 * A destination far below its rate is not leased at all (domain/rate/unleased-sends.ts): this
 * process sends at once, counted as a leased send is, so that the first lease it takes (a
 * burst past the allowance, a 429, a delivery back from a deferral) carries that feedback.
 */
export class DeliveryLimiter extends LimiterPaces {
  private closed = false;

  constructor(
    private readonly store: RateLeaseStore,
    clock: Clock,
    log: Logger,
    /** This process, as the controller counts its senders. */
    private readonly holder: string,
    /** Carries out the controller's grants to bring deferred deliveries forward; absent, none is brought. */
    private readonly advancer?: DeferredAdvancer,
    /** Herald's own metrics: deferrals and the rate changes this process's leases bring; absent: none recorded. */
    private readonly metrics?: Metrics,
  ) {
    super(clock, log);
  }

  /**
   * Resolves when this process may send to the destination, or at once with a defer. A caller
   * with work to do before its turn (`beforeTurn`) keeps its place meanwhile: a turn that
   * comes first goes to the next caller that is ready.
   */
  async acquire(destinationId: string, bounds: RateBounds, maxWaitMs: number, options: AcquireOptions = {}): Promise<Gate> {
    const { beforeTurn } = options;
    const returning = options.returning === true;
    const pace = this.pace(destinationId, bounds);
    const wasUnleased = pace.unleased.leasedAt === undefined;
    const { mode, state } = takeSendMode(pace.unleased, bounds, this.now(), returning);
    pace.unleased = state;
    if (mode.unleased) return this.sendUnleased(pace, beforeTurn);
    if (wasUnleased) this.log.debug('destination leased: no longer far below its rate', { destinationId, why: mode.why });
    // Back from unleased sends, grids from a lease long past are no guide to the wait: a fresh lease is.
    if (pace.grids === undefined || (wasUnleased && pace.validUntil <= this.now())) await this.lease(destinationId, pace);
    this.renew(destinationId, pace);
    const t = this.now();
    const { wait, gap } = waitAt(pace, t, this.holder);
    if (wait > maxWaitMs) return this.counted(defer(pace, t, t + wait, gap, returning));
    if (this.closed) throw new LimiterClosedError();
    let waiter!: Waiter;
    const myTurn = new Promise<Gate>((settle, stop) => {
      waiter = { ready: beforeTurn === undefined, go: () => settle({ kind: 'send' }), stop };
      // The wait was an estimate (the next grid may start later than it says, or the
      // rate fall): a caller still waiting at its limit is deferred after all, so that its wait
      // and its attempt stay inside what it may take.
      waiter.deadline = setTimeout(() => {
        if (!leave(pace, waiter)) return;
        const now = this.now();
        settle(this.counted(defer(pace, now, now + waitAt(pace, now, this.holder).wait, gap, returning)));
      }, maxWaitMs);
      pace.queue.push(waiter);
    });
    // Closing fails the waiter while its work may still run: awaited below.
    myTurn.catch(() => undefined);
    if (beforeTurn !== undefined) {
      const wanted = await beforeTurn().catch((e: unknown) => {
        leave(pace, waiter);
        throw e;
      });
      if (!wanted) {
        leave(pace, waiter);
        return { kind: 'skip' };
      }
      waiter.ready = true;
    }
    this.drain(destinationId, pace);
    const gate = await myTurn;
    if (gate.kind === 'send' && wait > 0) countLimited(pace, this.now());
    return gate;
  }

  /** A deferral, counted. */
  private counted(gate: Gate): Gate {
    this.metrics?.add('rateDeferred', 1);
    return gate;
  }

  /**
   * A send without a lease, at once: after the caller's work before it (which may find
   * nothing to send), counted in flight and reported as a leased send is.
   */
  private async sendUnleased(pace: DestinationPace, beforeTurn: BeforeTurn | undefined): Promise<Gate> {
    if (this.closed) throw new LimiterClosedError();
    const counted = pace.unleased.sends.at(-1)!;
    if (beforeTurn !== undefined) {
      const wanted = await beforeTurn().catch((e: unknown) => {
        pace.unleased = withdrawSend(pace.unleased, counted);
        throw e;
      });
      if (!wanted || this.closed) pace.unleased = withdrawSend(pace.unleased, counted);
      if (this.closed) throw new LimiterClosedError();
      if (!wanted) return { kind: 'skip' };
    }
    const now = this.now();
    // Nothing leases while the destination stays unleased: what the next lease would carry is kept for a while only.
    while (pace.inFlight.length > 0 && pace.inFlight[0]! < now - FORGET_IN_FLIGHT_MS) pace.inFlight.shift();
    for (const second of Object.keys(pace.feedback)) if (Number(second) * 1000 < now - KEEP_UNREPORTED_MS) delete pace.feedback[second];
    pace.inFlight.push(now);
    return { kind: 'send' };
  }

  /** What an attempt that started at `startedAt` came to: the controller learns it with this process's next lease. */
  report(destinationId: string, result: AttemptResult, startedAt: Date): void {
    const pace = this.paces.get(destinationId);
    if (!pace) return;
    this.touch(destinationId, pace);
    // Attempts end about in the order they started: the oldest let go is the one reported.
    pace.inFlight.shift();
    const counts = countsAt(pace, startedAt.getTime());
    const { signal, timedOut, pauseUntil } = attemptFeedback(result, this.clock.now());
    counts.sent++;
    if (signal === 'accepted') counts.ok++;
    if (signal === 'overload') counts.throttled++;
    if (timedOut) counts.timedOut = (counts.timedOut ?? 0) + 1;
    if (signal === 'overload') pace.unleased = throttled(pace.unleased, this.now());
    if (pauseUntil !== undefined) {
      pace.pausedUntil = Math.max(pace.pausedUntil ?? 0, pauseUntil);
      pace.reportPause = Math.max(pace.reportPause ?? 0, pauseUntil);
    }
  }

  /**
   * Shutting down: callers still waiting for a turn fail (their push is not acked, so
   * Pub/Sub brings the event again), and no lease or timer outlives the process's clients.
   */
  close(): void {
    this.closed = true;
    for (const pace of this.paces.values()) {
      clearTimeout(pace.timer);
      clearTimeout(pace.renewTimer);
      pace.timer = undefined;
      pace.renewTimer = undefined;
      for (const waiter of pace.queue.splice(0)) {
        clearTimeout(waiter.deadline);
        waiter.stop(new LimiterClosedError());
      }
    }
  }

  /** Resolves once no deferred deliveries are being brought forward (after close(), before the clients close). */
  async advancesDone(): Promise<void> {
    await Promise.all([...this.paces.values()].map((pace) => pace.advancing));
  }

  /**
   * Hands out this process's turns, one caller each (the first ready), none inside a pause.
   * With no caller ready, turns pass unused: the next to be ready drains again.
   */
  private drain(destinationId: string, pace: DestinationPace): void {
    if (this.closed || pace.timer !== undefined || pace.grids === undefined) return;
    while (pace.queue.some((w) => w.ready)) {
      const now = this.now();
      const pause = pace.pausedUntil ?? 0;
      const turn = nextTurn(pace.grids, this.holder, pace.lastTurnAt, Math.max(now, pause));
      // No turn on the grids known (this process joined), or past what the last lease covers:
      // the next lease brings one, and drains again.
      if (turn === undefined || turn >= pace.validUntil) return this.renew(destinationId, pace);
      const at = Math.max(turn, pause);
      if (at > now) {
        pace.timer = setTimeout(() => {
          pace.timer = undefined;
          this.drain(destinationId, pace);
        }, at - now);
        return;
      }
      pace.lastTurnAt = turn;
      pace.inFlight.push(now);
      const first = pace.queue.findIndex((w) => w.ready);
      const waiter = pace.queue.splice(first, 1)[0]!;
      clearTimeout(waiter.deadline);
      waiter.go();
    }
  }

  /**
   * Leases again now if the last lease's span is over (else when it is), and keeps doing so
   * once a span while callers wait for turns (queued, or deferred lately). Then drains: the
   * new grids may hold turns.
   */
  private renew(destinationId: string, pace: DestinationPace): void {
    // A lease under way renews when it ends.
    if (this.closed || pace.renewTimer !== undefined || pace.leasing !== undefined) return;
    const due = (pace.leasedAt ?? 0) + Math.max(MIN_LEASE_GAP_MS, pace.spanMs);
    const now = this.now();
    if (now < due) {
      pace.renewTimer = setTimeout(() => {
        pace.renewTimer = undefined;
        this.renew(destinationId, pace);
      }, due - now);
      pace.renewTimer.unref();
      return;
    }
    // Only work waiting for turns keeps the leases going: attempts in flight and their outcomes
    // ride on the next lease that is needed (a slow destination with a couple of attempts
    // always in flight would otherwise lease every span for nothing).
    const waiting = pace.queue.length > 0 || pace.deferrals.some((t) => t > now - DEFER_WINDOW_MS);
    if (!waiting) return;
    this.lease(destinationId, pace)
      .then(
        () => this.drain(destinationId, pace),
        (e: unknown) => {
          // The grids leased before stand until a lease succeeds; the feedback waits for it.
          this.log.warn('rate lease failed; sending on the last grids', { destinationId, error: (e as Error).message });
        },
      )
      .finally(() => this.renew(destinationId, pace));
  }

  private lease(destinationId: string, pace: DestinationPace): Promise<void> {
    pace.leasing ??= this.takeLease(destinationId, pace).finally(() => (pace.leasing = undefined));
    return pace.leasing;
  }

  private async takeLease(destinationId: string, pace: DestinationPace): Promise<void> {
    const now = this.now();
    pace.leasedAt = now;
    // An attempt let go and never reported (its caller failed before it) stops holding the judgement back after a while.
    while (pace.inFlight.length > 0 && pace.inFlight[0]! < now - FORGET_IN_FLIGHT_MS) pace.inFlight.shift();
    const reportedThrough = pace.inFlight[0] ?? now;
    pace.deferrals = pace.deferrals.filter((t) => t > now - DEFER_WINDOW_MS);
    const backlog = pace.queue.length + pace.deferrals.length;
    const feedback = pace.feedback;
    const pauseUntil = pace.reportPause;
    const deferred = pace.deferred;
    const drainedAt = pace.drainedAt;
    const deferredAgain = pace.deferredAgain;
    pace.deferredAgain = 0;
    pace.feedback = {};
    delete pace.reportPause;
    delete pace.drainedAt;
    pace.deferred = { count: 0, until: 0 };
    try {
      const granted = await this.store.lease(destinationId, {
        holder: this.holder,
        backlog,
        reportedThrough,
        ...(deferred.count > 0 ? { deferred } : {}),
        ...(deferredAgain > 0 ? { deferredAgain } : {}),
        ...(drainedAt !== undefined ? { drainedAt } : {}),
        feedback: { seconds: feedback, ...(pauseUntil !== undefined ? { pauseUntil } : {}) },
        bounds: pace.bounds,
        now,
      });
      if (pace.rate !== undefined && Math.abs(granted.rate - pace.rate) >= 1) this.log.debug('delivery rate changed', { destinationId, rate: granted.rate, from: pace.rate });
      if (pace.rate !== undefined && Math.abs(granted.rate - pace.rate) >= 1) this.metrics?.add('rateChanges', 1, { direction: granted.rate > pace.rate ? 'up' : 'down' });
      pace.grids = granted.grids;
      pace.validUntil = granted.validUntil;
      pace.rate = granted.rate;
      pace.spanMs = granted.spanMs;
      // The destination's cursor counts this process's deferrals reported now, and everyone
      // else's; it starts again from now once they have all come back. Deferrals made while
      // this lease was under way are not in it yet: moved by them, as the next lease will.
      pace.deferCursor = nextDeferCursor(granted.deferCursor, pace.deferred, granted.rate, this.now());
      if (granted.pausedUntil !== undefined) pace.pausedUntil = Math.max(pace.pausedUntil ?? 0, granted.pausedUntil);
      if (leaseShowsThrottle(granted, pace.bounds, this.now())) pace.unleased = throttled(pace.unleased, this.now());
      if (granted.advance > 0) this.bringForward(destinationId, pace, granted.advance);
    } catch (e) {
      // Not lost: the next lease carries it.
      pace.feedback = mergeCounts(pace.feedback, feedback);
      if (pauseUntil !== undefined) pace.reportPause = Math.max(pace.reportPause ?? 0, pauseUntil);
      pace.deferred = addDeferred(pace.deferred, deferred);
      pace.deferredAgain += deferredAgain;
      if (drainedAt !== undefined) pace.drainedAt ??= drainedAt;
      throw e;
    }
  }

  /**
   * The controller granted turns that no sender has work for while deliveries wait deferred:
   * those are brought forward (they then wait their turns here, or wherever their lane pushes
   * them), one grant at a time; a grant that comes meanwhile is carried out next. A grant
   * that fails is dropped: the turns it was for go unused, and later leases grant the next.
   */
  private bringForward(destinationId: string, pace: DestinationPace, count: number): void {
    if (!this.advancer || this.closed) return;
    if (pace.advancing !== undefined) {
      pace.advanceOwed += count;
      return;
    }
    // Taken before the query: a deferral written after it is reported after it, and keeps the cursor.
    const lookedAt = this.now();
    pace.advancing = this.advancer.bringForward(destinationId, count)
      .then(
        ({ drained }) => {
          if (drained) pace.drainedAt = lookedAt;
        },
        (e: unknown) => this.log.warn('bringing deferred deliveries forward failed; a later lease grants their turns again', { destinationId, error: (e as Error).message }),
      )
      .finally(() => {
        pace.advancing = undefined;
        const owed = pace.advanceOwed;
        pace.advanceOwed = 0;
        // Nothing left to bring: what was granted since has nothing to fill it either.
        if (owed > 0 && pace.drainedAt === undefined) this.bringForward(destinationId, pace, owed);
      });
  }
}
