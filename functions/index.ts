// A namespace import would copy the module; the Cloud Functions hook below must patch the real one.
// eslint-disable-next-line @typescript-eslint/no-require-imports
import http = require('node:http');
import * as functions from '@google-cloud/functions-framework';
import { adminHandler } from './admin';
import { jsonBodyErrors } from './http';
import { ingestHandler } from './ingest';
import { deliverHandler, routeHandler } from './push';
import { FunctionName } from '../shared/topology';

/** Every Herald function, registered under the entry-point names Cloud Functions deploys. */
export const HANDLERS: Record<FunctionName, functions.HttpFunction> = {
  ingest: ingestHandler,
  admin: adminHandler,
  route: routeHandler,
  deliver: deliverHandler,
};

for (const [name, handler] of Object.entries(HANDLERS)) functions.http(name, handler);

type ExpressApp = http.RequestListener & { use?: (handler: typeof jsonBodyErrors) => void };

/** Adds Herald's JSON answer for body-parse errors to a functions-framework server's app. */
export function installJsonErrors(server: http.Server): void {
  const app = server.listeners('request')[0] as ExpressApp | undefined;
  app?.use?.(jsonBodyErrors);
}

// On Cloud Functions the framework builds its one server after loading this module and
// offers no hook: catch that server as it is made. Local mode calls installJsonErrors itself.
if (process.env.FUNCTION_TARGET !== undefined) {
  const createServer = http.createServer;
  http.createServer = ((...args: Parameters<typeof http.createServer>) => {
    http.createServer = createServer;
    const server = createServer(...args);
    installJsonErrors(server);
    return server;
  }) as typeof http.createServer;
}
