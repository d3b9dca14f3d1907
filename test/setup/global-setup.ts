// jest globalSetup: one emulator pair for the whole run. Workers are forked after this runs,
// so the variables set here reach every test file.
import { startEmulators, type RunningEmulators } from '../../apps/local/emulators';

export default async function globalSetup(): Promise<void> {
  const emulators = await startEmulators();
  (globalThis as { __HERALD_EMULATORS__?: RunningEmulators }).__HERALD_EMULATORS__ = emulators;
  process.env.PUBSUB_EMULATOR_HOST = emulators.pubsubHost;
  process.env.FIRESTORE_EMULATOR_HOST = emulators.firestoreHost;
  process.env.METADATA_SERVER_DETECTION = 'none';
  const how = (started: boolean, envVar: string): string => (started ? 'started' : `reused from ${envVar}`);
  console.log(
    `\nHerald emulators: Pub/Sub ${emulators.pubsubHost} (${how(emulators.started.pubsub, 'PUBSUB_EMULATOR_HOST')}), ` +
      `Firestore ${emulators.firestoreHost} (${how(emulators.started.firestore, 'FIRESTORE_EMULATOR_HOST')})`,
  );
}
