/**
 * A deliver instance's memory with the whole registry in Firestore: scale-deliver-child.ts,
 * compiled with esbuild and forked as plain node with the stack's project, emulators and secrets key, sent `perDestination` events for
 * each of the `targets` as lane messages (deliverFromLane, as the deliver function runs a push),
 * to the loopback receiver; then its RSS and heap. Arrivals are counted at the receiver.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { build } from 'esbuild';
import { planFunctions } from '../../infra/function-plan';
import { heraldTopology } from '../../shared/topology';
import { ArrivalCounter } from './fanout';
import { forkUntilReady } from './fork-child';
import { BenchHarness, BenchFailure } from './harness';
import { ChildMemory, ChildMessage, DeliverTarget, StartMessage } from './scale-deliver-child';

export const DELIVER_RSS_MAX_MIB = 150;

export interface MemoryPhase {
  destinations: number;
  deliveries: number;
  arrived: number;
  outcomes: Record<string, number>;
  errors: number;
  firstError?: string;
  seconds: number;
  memory: ChildMemory;
}

export async function memoryPhase(harness: BenchHarness, env: NodeJS.ProcessEnv, counter: ArrivalCounter, targets: DeliverTarget[], perDestination: number, concurrency: number): Promise<MemoryPhase> {
  // Compiled to plain JavaScript first, as a deployed function runs: under tsx the same child holds ~60 MiB more (its compiler, source maps).
  const dir = mkdtempSync(path.join(tmpdir(), 'herald-scale-'));
  harness.addCleanup('removing the compiled deliver instance', async () => rmSync(dir, { recursive: true, force: true }));
  const script = path.join(dir, 'scale-deliver-child.js');
  await build({ entryPoints: [path.join(__dirname, 'scale-deliver-child.ts')], outfile: script, bundle: true, platform: 'node', target: 'node20', format: 'cjs', packages: 'external', logLevel: 'error' });
  // The heap sized as the deployed deliver function's is (infra/function-plan.ts nodeOptionsFor), not to this machine's 24 GiB.
  const deployed = planFunctions({ topology: heraldTopology(), names: { prefix: 'herald' }, functions: {}, deliveryTimeoutMs: 5_000 }).find((p) => p.name === 'deliver')!;
  const nodeOptions = [env.NODE_OPTIONS, deployed.nodeOptions, '--expose-gc'].filter(Boolean).join(' ');
  // node_modules are found from the package: the bundle keeps them external.
  const { child } = await forkUntilReady<ChildMessage, Extract<ChildMessage, { type: 'ready' }>>(script, { ...env, NODE_OPTIONS: nodeOptions, NODE_PATH: path.join(__dirname, '../../node_modules') }, 'the deliver instance', harness.signal, (line) => harness.note(`deliver instance: ${line}`), []);
  harness.addCleanup('stopping the deliver instance', async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  counter.reset();
  const report = await harness.guard(
    new Promise<Extract<ChildMessage, { type: 'report' }>>((resolve, reject) => {
      child.on('message', (m: ChildMessage) => {
        if (m.type === 'report') resolve(m);
        else if (m.type === 'failed') reject(new BenchFailure(`the deliver instance failed: ${m.message}`));
      });
      child.once('exit', (code) => reject(new BenchFailure(`the deliver instance exited (code ${code}) before reporting`)));
      const start: StartMessage = { type: 'start', targets, perDestination, concurrency };
      child.send(start);
    }),
  );
  // A delivery is acked after the receiver answered: every one attempted has arrived by now.
  return {
    destinations: targets.length,
    deliveries: targets.length * perDestination,
    arrived: counter.arrived.size,
    outcomes: report.outcomes,
    errors: report.errors,
    ...(report.firstError !== undefined ? { firstError: report.firstError } : {}),
    seconds: report.seconds,
    memory: report.memory,
  };
}
