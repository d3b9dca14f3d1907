import http from 'node:http';
import { AddressInfo } from 'node:net';
import { getTestServer } from '@google-cloud/functions-framework/testing';

/**
 * One more instance of the admin function, in a process of its own, as Cloud Functions runs
 * one: its runtime built from the environment on first use (functions/process-runtime.ts), nothing
 * shared with the test's stack but Firestore and Pub/Sub. Serves the function at its root on
 * a free port and prints `admin instance at <url>` once listening; SIGTERM stops it.
 *
 * Run with `node --import tsx test/support/admin-instance.ts` and the deployment's variables
 * (HERALD_PROJECT_ID, tokens, HERALD_SECRETS_KEY, HERALD_PUSH_TOKEN, HERALD_PUSH_BASE_URL, the emulator hosts).
 */
async function main(): Promise<void> {
  const { prepareFunctionServer } = await import('../../functions/index');
  const fn = getTestServer('admin');
  prepareFunctionServer(fn, 'admin');
  const app = fn.listeners('request')[0] as http.RequestListener;
  const server = http.createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  process.stdout.write(`admin instance at http://127.0.0.1:${(server.address() as AddressInfo).port}\n`);
  process.on('SIGTERM', () => {
    server.close();
    server.closeAllConnections();
    void import('../../functions/process-runtime').then(async ({ existingRuntime }) => {
      await existingRuntime()?.close().catch(() => undefined);
      process.exit(0);
    });
  });
}

main().catch((e: unknown) => {
  process.stderr.write(`admin instance: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
