import { Firestore } from '@google-cloud/firestore';
import { FirestorePortalStore } from '../../shared/adapters/firestore/portal';
import { OperationCounter } from '../../shared/adapters/firestore/stores';
import { portalStoreConformance } from '../support/portal-store-conformance';

/** PortalStore's contract suite on the Firestore emulator (memory's: test/unit/memory-store-contracts.test.ts). */
const projectId = 'portal-store-test';
const db = new Firestore({ projectId, ignoreUndefinedProperties: true });
afterAll(() => db.terminate());

portalStoreConformance('firestore', () => new FirestorePortalStore(db));

test('revoking a link costs one read and one write however many sessions it opened (issue 50: it read them all)', async () => {
  const ops = new OperationCounter();
  const store = new FirestorePortalStore(db, ops);
  const account = `acct-bounded-${Date.now().toString(36)}`;
  const at = (ms: number) => new Date(Date.parse('2026-11-26T00:00:00.000Z') + ms).toISOString();
  const linkId = `link-bounded-${Math.random().toString(36).slice(2, 12)}`;
  await store.createLink({ id: linkId, account, mintedBy: 'admin', readOnly: false, maxSessions: 100, createdAt: at(0), expiresAt: at(3_600_000) });
  for (let n = 0; n < 60; n++) await store.createSession({ id: `${linkId}-s${String(n).padStart(3, '0')}`, linkId, account, createdAt: at(n + 1), expiresAt: at(3_600_000) });
  ops.reset();
  expect((await store.revokeLink(account, linkId, at(10_000)))?.revokedAt).toBe(at(10_000));
  expect({ reads: ops.reads, writes: ops.writes }).toEqual({ reads: 1, writes: 1 });
});
