import { Firestore } from '@google-cloud/firestore';
import { FirestoreDeliveryStore } from '../../shared/adapters/firestore-stores';
import { FirestoreRateStore } from '../../shared/adapters/firestore-rates';
import { rateStoreConformance } from '../support/rate-store-conformance';
import { deliveryStoreConformance } from '../support/delivery-store-conformance';

const projectId = 'delivery-store-test';
const db = new Firestore({ projectId, ignoreUndefinedProperties: true });

async function wipe(): Promise<void> {
  const res = await fetch(`http://${process.env.FIRESTORE_EMULATOR_HOST}/emulator/v1/projects/${projectId}/databases/(default)/documents`, { method: 'DELETE' });
  if (!res.ok) throw new Error(`could not clear the Firestore emulator: ${res.status}`);
}

afterAll(() => db.terminate());

deliveryStoreConformance('firestore', async () => {
  await wipe();
  return new FirestoreDeliveryStore(db);
});

rateStoreConformance('firestore', async () => {
  await wipe();
  return new FirestoreRateStore(db);
});
