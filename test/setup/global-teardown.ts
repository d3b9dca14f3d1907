// jest globalTeardown: stops only the emulators globalSetup started (reused ones keep running).
import type { RunningEmulators } from '../../apps/local/emulators';

export default async function globalTeardown(): Promise<void> {
  const holder = globalThis as { __HERALD_EMULATORS__?: RunningEmulators };
  await holder.__HERALD_EMULATORS__?.stop();
  holder.__HERALD_EMULATORS__ = undefined;
}
