// A namespace import would copy the module; the Cloud Functions hook below must patch the real one.
// eslint-disable-next-line @typescript-eslint/no-require-imports
import http = require('node:http');
import * as functions from '@google-cloud/functions-framework';
import { adminHandler } from './admin';
import { jsonBodyErrors } from './http';
import { ingestHandler } from './ingest';
import { deliverHandler, routeHandler } from './push';
import { pumpHandler } from './pump';
import { replayHandler } from './replay';
import { suspensionCheckHandler } from './suspension-check';
import { FUNCTION_NAMES, FunctionName } from '../shared/topology';

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

type ExpressApp = http.RequestListener & { use?: (handler: ReturnType<typeof jsonBodyErrors>) => void };

/**
 * Every Herald function reads the raw body itself, after checking the caller's token: a
 * body the framework's parser refuses goes to the function all the same, so an
 * unauthenticated caller gets 401 whatever it sent, and binary-mode data stays opaque.
 */
export function installJsonErrors(server: http.Server, fn: FunctionName): void {
  const app = server.listeners('request')[0] as ExpressApp | undefined;
  app?.use?.(jsonBodyErrors(HANDLERS[fn]));
}

// On Cloud Functions the framework builds its one server after loading this module and
// offers no hook: catch that server as it is made. Local mode calls installJsonErrors itself.
const deployedTarget = FUNCTION_NAMES.find((name) => name === process.env.FUNCTION_TARGET);
if (deployedTarget !== undefined) {
  const createServer = http.createServer;
  http.createServer = ((...args: Parameters<typeof http.createServer>) => {
    http.createServer = createServer;
    const server = createServer(...args);
    installJsonErrors(server, deployedTarget);
    return server;
  }) as typeof http.createServer;
}
