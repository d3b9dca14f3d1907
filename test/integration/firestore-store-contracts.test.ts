import { Firestore } from '@google-cloud/firestore';
import { FirestoreEventTypeStore } from '../../shared/adapters/firestore/event-types';
import { FirestoreRateLeaseStore } from '../../shared/adapters/firestore/rate-leases';
import { FirestoreReplayStore } from '../../shared/adapters/firestore/replays';
import { FirestoreDestinationStore } from '../../shared/adapters/firestore/destinations';
import { FirestoreIntakeStore } from '../../shared/adapters/firestore/intake';
import { destinationStoreConformance } from '../support/destination-store-conformance';
import { eventTypeStoreConformance } from '../support/event-type-store-conformance';
import { intakeStoreConformance } from '../support/intake-store-conformance';
import { rateLeaseStoreConformance } from '../support/rate-lease-store-conformance';
import { replayStoreConformance } from '../support/replay-store-conformance';

/**
 * The ports' contract suites on the Firestore adapters, against the emulator (the same suites
 * run on the memory fakes in test/unit/memory-store-contracts.test.ts). Each test starts from
 * an empty database.
 */
const projectId = `store-contracts-${Date.now().toString(36)}`;
const db = new Firestore({ projectId, ignoreUndefinedProperties: true });
afterAll(() => db.terminate());

async function empty(): Promise<Firestore> {
  const res = await fetch(`http://${process.env.FIRESTORE_EMULATOR_HOST}/emulator/v1/projects/${projectId}/databases/(default)/documents`, { method: 'DELETE' });
  if (!res.ok) throw new Error(`could not clear the Firestore emulator: ${res.status}`);
  return db;
}

destinationStoreConformance('firestore', async () => new FirestoreDestinationStore(await empty()), { changes: true });
replayStoreConformance('firestore', async () => new FirestoreReplayStore(await empty()));
eventTypeStoreConformance('firestore', async () => new FirestoreEventTypeStore(await empty()));
rateLeaseStoreConformance('firestore', async () => new FirestoreRateLeaseStore(await empty()));
intakeStoreConformance('firestore', async () => new FirestoreIntakeStore(await empty()));
