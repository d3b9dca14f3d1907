import { Firestore } from '@google-cloud/firestore';
import { FirestoreQuotaStore } from '../../shared/adapters/firestore/quotas';
import { quotaStoreConformance } from '../support/quota-store-conformance';

/** QuotaStore's contract suite on the Firestore emulator (memory's: test/unit/memory-store-contracts.test.ts). */
const projectId = 'quota-store-test';
const db = new Firestore({ projectId, ignoreUndefinedProperties: true });
afterAll(() => db.terminate());

quotaStoreConformance('firestore', () => new FirestoreQuotaStore(db));
