// A namespace import would copy the module; the Cloud Functions hook below must patch the real one.
// eslint-disable-next-line @typescript-eslint/no-require-imports
import http = require('node:http');
import { constants } from 'node:os';
import * as functions from '@google-cloud/functions-framework';
import { adminHandler } from './admin';
import { expressErrors } from './http';
import { DOORS } from './doors';
import { gated } from './request-gate';
import { ingestHandler } from './ingest';
import { deliverHandler, routeHandler } from './push';
import { pumpHandler } from './pump';
import { replayHandler } from './replay';
import { suspensionCheckHandler } from './suspension-check';
import { FUNCTION_NAMES, FunctionName } from '../shared/topology';
import { DRAIN_LIMIT_MS, GracefulStop, onStopSignals, StopSignal, stopServing } from '../shared/adapters/graceful-stop';
import { existingRuntime, runtime } from './process-runtime';
import { createLogger } from '../shared/log';

/** Every Herald function, registered under the entry-point names Cloud Functions deploys. */
export const HANDLERS: Record<FunctionName, functions.HttpFunction> = {
  ingest: ingestHandler,
  admin: adminHandler,
  route: routeHandler,
  deliver: deliverHandler,
  pump: pumpHandler,
  'suspension-check': suspensionCheckHandler,
  replay: replayHandler,
};

for (const [name, handler] of Object.entries(HANDLERS)) functions.http(name, handler);

type ExpressApp = http.RequestListener & { use?: (handler: ReturnType<typeof expressErrors>) => void };

/**
 * Readies the functions framework's server of a function for Herald: in front of it the
 * function's request gate, which admits a caller on its headers and only then reads its body,
 * within bounds (request-gate.ts, doors.ts), so the framework's own parser (1 GiB, inflating)
 * never reads a byte; behind it Herald's JSON answer to what Express refuses. Deployed through
 * the hook below; local mode and the tests' stand-alone instances call it themselves.
 */
export function prepareFunctionServer(server: http.Server, fn: FunctionName): void {
  const [app] = server.listeners('request') as ExpressApp[];
  if (!app) return;
  app.use?.(expressErrors());
  server.removeListener('request', app);
  server.on('request', gated(DOORS[fn], app, runtime));
}

/** What a deployed function may use of Cloud Run's 10 s between SIGTERM and SIGKILL to finish its requests. */
export const SHUTDOWN_DRAIN_MS = DRAIN_LIMIT_MS;

/**
 * The functions framework exits at once on SIGTERM, cutting off every request under way (an
 * attempt made but not recorded is made again; counters not flushed are lost). Herald's own
 * handler replaces it with the stop local mode uses too (stopServing): no new requests, those
 * under way get up to SHUTDOWN_DRAIN_MS, then it flushes what it holds and closes its
 * clients — all within Cloud Run's 10 s — and exits 0. A second signal exits at once.
 */
export function installGracefulStop(
  server: http.Server,
  host: { signals: Pick<NodeJS.Process, 'on' | 'removeAllListeners'>; exit: (code: number) => void; drainMs: number } = { signals: process, exit: (code) => process.exit(code), drainMs: SHUTDOWN_DRAIN_MS },
): GracefulStop {
  const graceful = new GracefulStop();
  const [app] = server.listeners('request') as http.RequestListener[];
  if (app) {
    server.removeListener('request', app);
    server.on('request', graceful.guard(app));
  }
  const stop = async (signal: StopSignal) => {
    const rt = existingRuntime();
    const log = rt?.log ?? createLogger();
    log.info(`${signal}: stopping`, { signal });
    await stopServing({ graceful, server, log, drainMs: host.drainMs, ...(rt ? { runtime: rt } : {}) });
    host.exit(0);
  };
  // The framework registers its own handlers once it listens: take their place then.
  server.once('listening', () => setImmediate(() => onStopSignals(host.signals, stop, (signal) => host.exit(128 + constants.signals[signal]), { replace: true })));
  return graceful;
}

// On Cloud Functions the framework builds its one server after loading this module and
// offers no hook: catch that server as it is made. Local mode calls prepareFunctionServer itself.
const deployedTarget = FUNCTION_NAMES.find((name) => name === process.env.FUNCTION_TARGET);
if (deployedTarget !== undefined) {
  const createServer = http.createServer;
  http.createServer = ((...args: Parameters<typeof http.createServer>) => {
    http.createServer = createServer;
    const server = createServer(...args);
    prepareFunctionServer(server, deployedTarget);
    installGracefulStop(server);
    return server;
  }) as typeof http.createServer;
}
