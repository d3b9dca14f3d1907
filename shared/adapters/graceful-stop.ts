import http from 'node:http';
import { Logger } from '../ports/clock';

/**
 * Stopping without losing work, for local mode and for a deployed function (Cloud Run sends
 * SIGTERM and allows 10 s): new requests get 503 (Pub/Sub pushes them again later), those
 * under way get a bounded time to finish and record what they did, then the caller closes
 * its clients. A request still running when time is up is cut off: its push comes again,
 * and a delivery it had attempted may be attempted twice — never lost.
 */
export class GracefulStop {
  private readonly active = new Set<http.ServerResponse>();
  private drained: (() => void) | undefined;
  stopping = false;

  /** Requests under way now. */
  get inProgress(): number {
    return this.active.size;
  }

  /** Wraps a request listener: refused with 503 once stopping, tracked until it ends otherwise. */
  guard(listener: http.RequestListener): http.RequestListener {
    return (req, res) => {
      if (this.stopping) {
        res.writeHead(503, { 'content-type': 'application/json', connection: 'close', 'retry-after': '1' });
        res.end(JSON.stringify({ error: 'Herald is stopping; send this again' }));
        return;
      }
      this.active.add(res);
      res.on('close', () => {
        this.active.delete(res);
        if (this.active.size === 0) this.drained?.();
      });
      listener(req, res);
    };
  }

  /** Refuses new requests and waits up to `drainMs` for those under way; resolves how many were still running. */
  async drain(drainMs: number, log: Logger): Promise<number> {
    this.stopping = true;
    if (this.active.size > 0) {
      let timer: NodeJS.Timeout | undefined;
      await new Promise<void>((resolve) => {
        this.drained = resolve;
        timer = setTimeout(resolve, drainMs);
      });
      clearTimeout(timer);
    }
    const left = this.active.size;
    if (left > 0) log.warn(`stopping with ${left} requests still in progress after ${drainMs} ms; their pushes will come again`, { inProgress: left });
    return left;
  }
}

/**
 * The most a whole stop may take, from the signal to the exit: Cloud Run sends SIGKILL 10 s
 * after SIGTERM, and local mode promises the same under load.
 */
export const STOP_BUDGET_MS = 9_500;
/** The part of the budget requests under way may use; the rest is for flushing and closing. */
export const DRAIN_LIMIT_MS = 7_000;
/** Flushing counters and closing the clients; a client whose service is gone can hang for minutes. */
export const CLOSE_LIMIT_MS = 1_500;

/** One step of stopping, with the most it may take (and never more than the budget left). */
export interface StopStep {
  name: string;
  limitMs: number;
  run: () => unknown;
}

export interface StepReport {
  name: string;
  outcome: 'done' | 'failed' | 'timed out';
  ms: number;
}

/**
 * Runs the steps one after another, each bounded by its limit and by what is left of
 * `budgetMs`: a step that fails or overruns is logged and left behind, and the next one
 * starts, so stopping ends within the budget whatever a step waits for.
 */
export async function runStopSteps(steps: readonly StopStep[], log: Logger, budgetMs = STOP_BUDGET_MS, now: () => number = Date.now): Promise<StepReport[]> {
  const deadline = now() + budgetMs;
  const reports: StepReport[] = [];
  for (const step of steps) {
    const began = now();
    const limitMs = Math.max(0, Math.min(step.limitMs, deadline - began));
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      Promise.resolve()
        .then(step.run)
        .then(
          () => 'done' as const,
          (e: unknown) => {
            log.warn(`stopping: ${step.name} failed; going on`, { step: step.name, error: (e as Error).message });
            return 'failed' as const;
          },
        ),
      new Promise<'timed out'>((resolve) => (timer = setTimeout(() => resolve('timed out'), limitMs))),
    ]);
    clearTimeout(timer);
    const ms = now() - began;
    if (outcome === 'timed out') log.warn(`stopping: ${step.name} did not end within ${limitMs} ms; going on without it`, { step: step.name, limitMs });
    reports.push({ name: step.name, outcome, ms });
  }
  return reports;
}

/** What a serving process holds that stopping must close: rate turns, buffered counters, clients. */
export interface StoppableRuntime {
  limiter: { close(): void };
  close(): Promise<void>;
}

export interface StopPlan {
  graceful: GracefulStop;
  server: http.Server;
  log: Logger;
  runtime?: StoppableRuntime;
  /** Asks background loops (local mode's pump and checks) to stop; their round under way ends within the drain. */
  loops?: () => Promise<void>;
  /** Before the clients are closed (tests: deleting their topics). */
  beforeClose?: StopStep[];
  /** After the clients are closed (local mode: the emulators it started). */
  after?: StopStep[];
  drainMs?: number;
  budgetMs?: number;
}

/**
 * How Herald stops, deployed (SIGTERM from Cloud Run) and in local mode alike: new requests
 * get 503 at once and deliveries waiting for a rate turn give up (Pub/Sub pushes both again;
 * a producer sends its event again), while requests under way and the background loops'
 * rounds get up to `drainMs` (at most DRAIN_LIMIT_MS) to finish and record what they did;
 * then the server closes, the runtime flushes and closes its clients, and the `after` steps
 * run — every step bounded, the whole within `budgetMs`, so a service that is gone (an
 * emulator, a client stuck retrying) cannot hold the process.
 */
export async function stopServing(plan: StopPlan): Promise<StepReport[]> {
  const drainMs = Math.min(plan.drainMs ?? DRAIN_LIMIT_MS, DRAIN_LIMIT_MS);
  const began = Date.now();
  plan.graceful.stopping = true;
  plan.runtime?.limiter.close();
  plan.log.info(`stopping: ${plan.graceful.inProgress} requests under way get up to ${drainMs} ms to finish; new ones get 503`, { inProgress: plan.graceful.inProgress, drainMs });
  const steps: StopStep[] = [
    {
      name: 'requests under way',
      limitMs: drainMs + 100,
      run: () =>
        Promise.all([
          plan.graceful.drain(drainMs, plan.log),
          plan.loops?.().catch((e: unknown) => plan.log.warn('stopping: a background loop failed as it stopped', { error: (e as Error).message })),
        ]),
    },
    {
      name: 'the server',
      limitMs: 500,
      run: () => {
        const closed = new Promise<void>((resolve) => plan.server.close(() => resolve()));
        plan.server.closeAllConnections();
        return closed;
      },
    },
    ...(plan.beforeClose ?? []),
    ...(plan.runtime ? [{ name: 'flushing counters and closing clients', limitMs: CLOSE_LIMIT_MS, run: () => plan.runtime?.close() }] : []),
    ...(plan.after ?? []),
  ];
  const reports = await runStopSteps(steps, plan.log, plan.budgetMs ?? STOP_BUDGET_MS);
  plan.log.info(`stopped in ${Date.now() - began} ms`, { steps: reports });
  return reports;
}

export type StopSignal = 'SIGINT' | 'SIGTERM';

/** Where stop signals come from: the process, or a fake in tests. */
export interface SignalSource {
  on(signal: StopSignal, listener: () => void): unknown;
  removeAllListeners(signal: StopSignal): unknown;
}

/**
 * A repeat that comes this soon is the same Ctrl-C: the tsx CLI passes a signal on to its
 * child, which the terminal has already sent it, when the child is slow to say it got it.
 */
export const SAME_SIGNAL_MS = 500;

/**
 * The first SIGINT or SIGTERM starts `stop` (which exits when done); another one, later than
 * SAME_SIGNAL_MS, calls `force`, which exits at once. `replace` removes the listeners
 * others registered first (the functions framework's immediate exit).
 */
export function onStopSignals(
  source: SignalSource,
  stop: (signal: StopSignal) => Promise<void> | void,
  force: (signal: StopSignal) => void,
  options: { replace?: boolean; now?: () => number } = {},
): void {
  const now = options.now ?? Date.now;
  let firstAt: number | undefined;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    if (options.replace) source.removeAllListeners(signal);
    source.on(signal, () => {
      if (firstAt === undefined) {
        firstAt = now();
        void stop(signal);
      } else if (now() - firstAt >= SAME_SIGNAL_MS) {
        force(signal);
      }
    });
  }
}
