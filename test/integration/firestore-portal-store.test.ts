import { Firestore } from '@google-cloud/firestore';
import { FirestorePortalStore } from '../../shared/adapters/firestore-portal';
import { portalStoreConformance } from '../support/portal-store-conformance';

/** PortalStore's contract suite on the Firestore emulator (memory's: test/unit/memory-store-contracts.test.ts). */
const projectId = 'portal-store-test';
const db = new Firestore({ projectId, ignoreUndefinedProperties: true });
afterAll(() => db.terminate());

portalStoreConformance('firestore', () => new FirestorePortalStore(db));
