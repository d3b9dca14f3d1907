import { Firestore } from '@google-cloud/firestore';
import { FirestoreDeliveryStore } from '../../shared/adapters/firestore/deliveries/delivery-store';
import { listAnswerBudgetSuite } from '../support/list-answer-budget';

const projectId = 'list-answer-budget-test';
const db = new Firestore({ projectId, ignoreUndefinedProperties: true });

async function wipe(): Promise<void> {
  const res = await fetch(`http://${process.env.FIRESTORE_EMULATOR_HOST}/emulator/v1/projects/${projectId}/databases/(default)/documents`, { method: 'DELETE' });
  if (!res.ok) throw new Error(`could not clear the Firestore emulator: ${res.status}`);
}

afterAll(() => db.terminate());

listAnswerBudgetSuite('firestore', async () => {
  await wipe();
  return new FirestoreDeliveryStore(db);
});
