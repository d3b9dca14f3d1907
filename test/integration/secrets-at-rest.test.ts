import { randomBytes } from 'node:crypto';
import { CollectionReference, DocumentData, Firestore } from '@google-cloud/firestore';
import { FirestoreDestinationStore } from '../../shared/adapters/firestore/destinations';
import { COLLECTIONS } from '../../shared/firestore-schema';
import { generateSecretsKey, keyIdOf, SecretBox, sealedKeyId } from '../../shared/domain/access/secret-box';
import { Receiver, ReceivedRequest } from '../support/receiver';
import { stringsIn, verifies } from '../support/secret-scan';
import { startTestStack, TestStack } from '../support/stack';

/**
 * Secrets at rest (issue 25): a Herald stack on the emulators with destinations (one with a
 * rotated secret), an account and its key; then every document of every collection of the
 * project, read straight from the Firestore emulator, holds no signing secret and no key,
 * while deliveries are still signed with the right secrets, after a restart too. A stack with
 * another key cannot read them, and says which key it lacks.
 */

const RUN = randomBytes(3).toString('hex');
const PROJECT = `secrets-at-rest-${RUN}`;
const KEY = generateSecretsKey();
const OTHER_KEY = generateSecretsKey();
const keyId = (key: string) => keyIdOf(Buffer.from(key, 'base64'));
const TYPE = 'com.example.secret.checked';
const OWN_SECRET = `whsec_${randomBytes(32).toString('base64')}`;

const receiver = new Receiver();
let stack: TestStack | undefined;
let db: Firestore;
/** Every secret and key Herald answered: none may be found in Firestore. */
const known = { secrets: {} as Record<string, string>, previous: '', accountKey: '' };

const start = async (key: string) => (stack = await startTestStack(PROJECT, { HERALD_SECRETS_KEY: key }));

async function stop(): Promise<void> {
  await stack?.stop();
  stack = undefined;
}

async function publish(id: string): Promise<void> {
  const res = await stack!.ingest({ 'ce-id': id, 'ce-source': '/secrets-at-rest', 'ce-type': TYPE, 'ce-specversion': '1.0', 'content-type': 'application/json' }, `{"n":"${id}"}`);
  expect(res).toEqual({ status: 202, body: { accepted: [id] } });
}

/** The request event `id` brought to `path`, once it arrives. */
async function delivered(path: string, id: string): Promise<ReceivedRequest> {
  const find = () => receiver.on(path).find((r) => r.headers['ce-id'] === id);
  const deadline = Date.now() + 30_000;
  while (!find()) {
    if (Date.now() > deadline) throw new Error(`event ${id} did not reach ${path}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return find()!;
}

/** Every document under `collections`, at every depth (subcollections too), with its path. */
async function everyDocument(collections: CollectionReference[]): Promise<{ path: string; data: DocumentData }[]> {
  const found: { path: string; data: DocumentData }[] = [];
  for (const collection of collections) {
    for (const ref of await collection.listDocuments()) {
      const snap = await ref.get();
      if (snap.exists) found.push({ path: ref.path, data: snap.data()! });
      found.push(...(await everyDocument(await ref.listCollections())));
    }
  }
  return found;
}

beforeAll(async () => {
  await receiver.start();
  db = new Firestore({ projectId: PROJECT });
  await start(KEY);
  const put = async (path: string, body: unknown) => {
    const res = await stack!.admin('PUT', path, body);
    expect(res.status).toBe(201);
    return (res.body as { secret: string }).secret;
  };
  known.secrets.generated = await put('/destinations/generated', { url: `${receiver.url}/generated`, eventTypes: [TYPE] });
  known.secrets.own = await put('/destinations/own', { url: `${receiver.url}/own`, eventTypes: [TYPE], secret: OWN_SECRET });
  expect(known.secrets.own).toBe(OWN_SECRET);
  known.previous = await put('/destinations/rotated', { url: `${receiver.url}/rotated`, eventTypes: [TYPE] });
  const rotated = await stack!.admin('POST', '/destinations/rotated/rotate-secret', { graceSeconds: 3600 });
  expect(rotated).toMatchObject({ status: 200, body: { previousSecrets: [{ expiresAt: expect.any(String) }] } });
  known.secrets.rotated = (rotated.body as { secret: string }).secret;
  expect((await stack!.admin('POST', '/accounts', { id: 'acme', name: 'Acme' })).status).toBe(201);
  const key = await stack!.admin('POST', '/accounts/acme/keys', { name: 'acme all' });
  expect(key.status).toBe(201);
  known.accountKey = (key.body as { key: string }).key;
  expect(known.accountKey).toMatch(/^hk_/);
  // A destination made with the account's own key, in its account.
  const own = await fetch(`${stack!.url}/admin/destinations/acme-hook`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${known.accountKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url: `${receiver.url}/acme`, eventTypes: [TYPE] }),
  });
  expect(own.status).toBe(201);
  known.secrets.acme = ((await own.json()) as { secret: string }).secret;
  for (const secret of Object.values(known.secrets)) expect(secret).toMatch(/^whsec_/);
});

afterAll(async () => {
  await stack?.stop({ purge: true });
  await db?.terminate();
  await receiver.stop();
});

describe('a running stack', () => {
  test('deliveries are signed with each destination’s secret; a rotated one with the new and the replaced', async () => {
    await publish('first');
    for (const destination of ['generated', 'own', 'rotated']) expect(verifies(await delivered(`/${destination}`, 'first'), known.secrets[destination]!)).toBe(true);
    const rotated = await delivered('/rotated', 'first');
    expect(String(rotated.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(verifies(rotated, known.previous)).toBe(true);
    expect(verifies(await delivered('/generated', 'first'), known.secrets.own!)).toBe(false);
    // The account's events reach its own destination, signed with its secret.
    const acme = await fetch(`${stack!.url}/ingest`, {
      method: 'POST',
      headers: { authorization: `Bearer ${known.accountKey}`, 'ce-id': 'acme-1', 'ce-source': '/secrets-at-rest', 'ce-type': TYPE, 'ce-specversion': '1.0', 'content-type': 'application/json' },
      body: '{"n":"acme-1"}',
    });
    expect(acme.status).toBe(202);
    expect(verifies(await delivered('/acme', 'acme-1'), known.secrets.acme!)).toBe(true);
  });

  test('no document of any collection holds a signing secret or an account key, in any field', async () => {
    const documents = await everyDocument(await db.listCollections());
    const collections = new Set(documents.map((d) => d.path.split('/')[0]));
    // What this test is about is there to be read: the registry, the accounts and their keys, the deliveries
    // (in documents of their own, or in groups when their successes ended close together: either holds the event).
    for (const c of [COLLECTIONS.destinations, COLLECTIONS.accounts, COLLECTIONS.accountKeys, COLLECTIONS.destinationChanges]) expect(collections).toContain(c);
    expect([COLLECTIONS.deliveries, COLLECTIONS.deliveryGroups].filter((c) => collections.has(c))).not.toHaveLength(0);
    const secrets = [...Object.values(known.secrets), known.previous];
    // Any secret or key by its shape (an hk_ key: hk_<16 hex>_…; a bare "hk_" turns up in base64url by chance),
    // and the ones Herald answered without their prefixes: the account key's secret part (after hk_<id>_).
    const shapes = [/whsec_/, /hk_[0-9a-f]{16}_/];
    const values = [...secrets.map((s) => s.slice('whsec_'.length)), known.accountKey.slice('hk_'.length + 17), KEY];
    const leaks = documents.flatMap((d) =>
      stringsIn(d.data).flatMap((text) => [
        ...shapes.filter((shape) => shape.test(text)).map((shape) => `${d.path} matches ${shape.source}`),
        ...values.filter((v) => text.includes(v)).map((v) => `${d.path} holds ${v.slice(0, 6)}…`),
      ]),
    );
    expect(leaks).toEqual([]);
  });

  test('each destination document holds its secrets sealed with the key, every replaced one too', async () => {
    const docs = (await db.collection(COLLECTIONS.destinations).get()).docs.map((d) => d.data() as { id: string; secret: string; previousSecrets?: { secret: string; expiresAt: string }[] });
    expect(docs.map((d) => d.id).sort()).toEqual(['acme_acme-hook', 'generated', 'own', 'rotated']);
    for (const doc of docs) expect(sealedKeyId(doc.secret)).toBe(keyId(KEY));
    const rotated = docs.find((d) => d.id === 'rotated')!;
    expect(rotated.previousSecrets).toHaveLength(1);
    expect(sealedKeyId(rotated.previousSecrets![0]!.secret)).toBe(keyId(KEY));
    // Bound to its destination: a sealed secret copied into another destination's document does not open there.
    const store = new FirestoreDestinationStore(db, undefined, SecretBox.fromConfig(KEY));
    expect((await store.get('rotated'))?.previousSecrets?.[0]?.secret).toBe(known.previous);
    await db.collection(COLLECTIONS.destinations).doc('copied').set({ ...docs.find((d) => d.id === 'own')!, id: 'copied' });
    await expect(store.get('copied')).rejects.toThrow(/^destination copied: a secret sealed with key id \w{8} failed authentication/);
    await db.collection(COLLECTIONS.destinations).doc('copied').delete();
  });

  test('a secret stored in plaintext by an older Herald is read as it is, and sealed on its next write', async () => {
    const store = new FirestoreDestinationStore(db, undefined, SecretBox.fromConfig(KEY));
    const legacySecret = `whsec_${randomBytes(32).toString('base64')}`;
    const at = new Date().toISOString();
    const ref = db.collection(COLLECTIONS.destinations).doc('legacy');
    await ref.set({ id: 'legacy', url: `${receiver.url}/legacy`, eventTypes: ['none.such'], policy: 'event-platform', secret: legacySecret, previousSecrets: [{ secret: OWN_SECRET, expiresAt: '2999-01-01T00:00:00.000Z' }], status: 'active', createdAt: at, updatedAt: at });
    expect(await store.get('legacy')).toMatchObject({ secret: legacySecret, previousSecrets: [{ secret: OWN_SECRET }] });
    await store.update('legacy', (d) => d && { ...d, updatedAt: new Date().toISOString() });
    const stored = (await ref.get()).data() as { secret: string; previousSecrets: { secret: string }[] };
    expect(sealedKeyId(stored.secret)).toBe(keyId(KEY));
    expect(sealedKeyId(stored.previousSecrets[0]!.secret)).toBe(keyId(KEY));
    expect(await store.get('legacy')).toMatchObject({ secret: legacySecret, previousSecrets: [{ secret: OWN_SECRET }] });
    expect(await store.delete('legacy')).toBe(true);
  });
});

describe('restarts', () => {
  test('a stack restarted with the same key still delivers, signed with the same secrets', async () => {
    await stop();
    await start(KEY);
    await publish('after-restart');
    for (const destination of ['generated', 'own', 'rotated']) expect(verifies(await delivered(`/${destination}`, 'after-restart'), known.secrets[destination]!)).toBe(true);
    expect(verifies(await delivered('/rotated', 'after-restart'), known.previous)).toBe(true);
  });

  test('with another key, reading fails with an error naming the key it lacks and what to do', async () => {
    await stop();
    const lacking = new RegExp(`^destination [\\w~-]+: a secret is sealed with key id ${keyId(KEY)}, which is not in HERALD_SECRETS_KEY \\(key ids ${keyId(OTHER_KEY)}\\): put that key back into HERALD_SECRETS_KEY`);
    // Local mode reads the registry as it starts: it stops there, rather than serve destinations it cannot sign for.
    await expect(start(OTHER_KEY)).rejects.toThrow(lacking);
    stack = undefined;
    const store = new FirestoreDestinationStore(db, undefined, SecretBox.fromConfig(OTHER_KEY));
    await expect(store.get('own')).rejects.toThrow(lacking);
    await expect(store.listAccount('default')).rejects.toThrow(lacking);
  });

  test('rotation: with a new key first and the old one after, deliveries go on, and a write seals with the new key', async () => {
    await start(`${OTHER_KEY},${KEY}`);
    await publish('rotated-key');
    expect(verifies(await delivered('/own', 'rotated-key'), OWN_SECRET)).toBe(true);
    const put = await stack!.admin('PUT', '/destinations/own', { url: `${receiver.url}/own`, eventTypes: [TYPE] });
    expect(put.status).toBe(200);
    const doc = (await db.collection(COLLECTIONS.destinations).doc('own').get()).data() as { secret: string };
    expect(sealedKeyId(doc.secret)).toBe(keyId(OTHER_KEY));
    // Only the new key now opens it.
    expect((await new FirestoreDestinationStore(db, undefined, SecretBox.fromConfig(OTHER_KEY)).get('own'))?.secret).toBe(OWN_SECRET);
  });
});
