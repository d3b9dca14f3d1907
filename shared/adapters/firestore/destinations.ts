import { DocumentData, DocumentReference, FieldPath, FieldValue, Firestore, Query, Timestamp } from '@google-cloud/firestore';
import { Destination } from '../../domain/destinations/destination';
import { DEFAULT_ACCOUNT, splitDestinationId } from '../../domain/ids';
import { isSealed, SecretBox, SecretBoxError, sealedKeyId } from '../../domain/access/secret-box';
import { mapReceiverSecrets } from '../../domain/destinations/receiver-spec';
import { DestinationChanges, DestinationStore } from '../../ports/destinations';
import { COLLECTIONS, FIRESTORE_QUERIES, FIRESTORE_TTL_FIELDS } from '../../firestore-schema';
import { OperationCounter } from './stores';
import { createIfAbsent, deleteIfExists, readDecideWrite, unlessChanged } from './write';

/** How long the destination change log keeps an entry (TTL); a directory idle longer reloads whole. */
export const CHANGE_KEEP_MS = 24 * 3600_000;
/** How far back each look at the change log reaches before the last one's read time. */
const CHANGE_OVERLAP_MS = 5_000;

export class FirestoreDestinationStore implements DestinationStore {
  /**
   * `box`: the signing secrets (`secret`, every `previousSecrets[].secret`) are sealed with it
   * in every document written, and opened in every document read; the rest of Herald sees
   * plaintext. Without one (the emulator only: runtime.ts refuses real Firestore without
   * HERALD_SECRETS_KEY) they are written as they are.
   */
  constructor(
    private readonly db: Firestore,
    private readonly ops = new OperationCounter(),
    private readonly box?: SecretBox,
  ) {}

  private get col() {
    return this.db.collection(COLLECTIONS.destinations);
  }

  /** The document for a destination: its secrets sealed, bound to its id (a sealed value copied to another destination does not open). */
  private toDoc(destination: Destination): Destination {
    const box = this.box;
    if (!box) return destination;
    const seal = (secret: string) => box.seal(secret, secretContext(destination.id));
    const doc: Destination = { ...destination, secret: seal(destination.secret) };
    if (destination.previousSecrets) doc.previousSecrets = destination.previousSecrets.map((p) => ({ ...p, secret: seal(p.secret) }));
    return mapReceiverSecrets(doc, (value, path) => box.seal(value, receiverContext(destination.id, path)));
  }

  /**
   * A destination from its document, its secrets opened. A plaintext secret is one written
   * before Herald encrypted them (older deployments): taken as it is, and sealed on the
   * destination's next write.
   */
  private fromDoc(data: DocumentData): Destination {
    const { [DEFAULT_ACCOUNT_MARK]: _mark, ...doc } = data as Destination & { [DEFAULT_ACCOUNT_MARK]?: true };
    const open = (stored: string, context = secretContext(doc.id)) => {
      if (!isSealed(stored)) return stored;
      try {
        if (!this.box) {
          throw new SecretBoxError(`its secret is encrypted (key id ${sealedKeyId(stored) ?? 'unknown'}) and HERALD_SECRETS_KEY is not set: set it to the key this data was written with`);
        }
        return this.box.open(stored, context);
      } catch (e) {
        throw e instanceof SecretBoxError ? new SecretBoxError(`destination ${doc.id}: ${e.message}`) : e;
      }
    };
    const destination: Destination = { ...doc, secret: open(doc.secret) };
    if (doc.previousSecrets) destination.previousSecrets = doc.previousSecrets.map((p) => ({ ...p, secret: open(p.secret) }));
    return mapReceiverSecrets(destination, (value, path) => open(value, receiverContext(doc.id, path)));
  }

  async get(id: string): Promise<Destination | undefined> {
    const snap = await this.col.doc(id).get();
    this.ops.reads++;
    return snap.exists ? this.fromDoc(snap.data()!) : undefined;
  }

  async list(): Promise<Destination[]> {
    const snap = await this.col.orderBy('id').get();
    this.ops.reads += Math.max(1, snap.size);
    return snap.docs.map((d) => this.fromDoc(d.data()));
  }

  /**
   * A named account's documents are `<account>_<id>`: the ids from `<account>_` up to
   * `<account>\`` (the character after `_`) are exactly its own, a range on the document id
   * that needs no field, no index and no migration. `default`'s ids carry no prefix to range
   * over: its documents carry a mark instead (DEFAULT_ACCOUNT_MARK, listDefault).
   */
  private accountQuery(account: string): Query | undefined {
    if (account === DEFAULT_ACCOUNT) return undefined;
    const id = FieldPath.documentId();
    return this.col.where(id, '>=', `${account}_`).where(id, '<', `${account}\``);
  }

  async listAccount(account: string): Promise<Destination[]> {
    const query = this.accountQuery(account);
    if (!query) return this.listDefault();
    const snap = await query.get();
    this.ops.reads += Math.max(1, snap.size);
    return snap.docs.map((d) => this.fromDoc(d.data()));
  }

  /**
   * The default account's destinations by their mark: one read of its count document and one per
   * destination, whatever the registry holds. The mark is on every document Herald writes since
   * it existed; the count document says `listable` once every one of the account's documents had
   * it, and the query is trusted only when it finds as many as the exact count says. Otherwise
   * (documents from before the mark, or rewritten by an older version during a deploy) the
   * registry is read once, the unmarked documents are marked, and the count taken.
   */
  private async listDefault(): Promise<Destination[]> {
    const ref = this.counts.doc(DEFAULT_ACCOUNT);
    const countSnap = await ref.get();
    this.ops.reads++;
    const stored = countSnap.data() as DestinationCount | undefined;
    if (stored?.exact === true && stored.listable === true) {
      const snap = await this.col.where(DEFAULT_ACCOUNT_MARK, '==', true).get();
      this.ops.reads += Math.max(1, snap.size);
      if (snap.size === stored.count) return snap.docs.map((d) => this.fromDoc(d.data()));
    }
    const snap = await this.col.orderBy('id').get();
    this.ops.reads += Math.max(1, snap.size);
    const own = snap.docs.filter((d) => splitDestinationId(d.id).account === DEFAULT_ACCOUNT);
    const unmarked = own.filter((d) => d.get(DEFAULT_ACCOUNT_MARK) !== true);
    for (let i = 0; i < unmarked.length; i += 500) {
      const batch = this.db.batch();
      // Only the mark: a write meanwhile (the whole document replaced) keeps its own.
      for (const d of unmarked.slice(i, i + 500)) batch.update(d.ref, { [DEFAULT_ACCOUNT_MARK]: true }, { lastUpdateTime: d.updateTime });
      await batch.commit().catch(() => undefined);
      this.ops.writes += Math.min(500, unmarked.length - i);
    }
    // Listable once the count is exact and matches; a create or delete meanwhile changed the document: the next list looks again.
    const count: DestinationCount = { count: own.length, exact: true, listable: true };
    if (countSnap.exists) await unlessChanged(() => ref.update(count as unknown as DocumentData, { lastUpdateTime: countSnap.updateTime! }));
    else await createIfAbsent(() => ref.create(count));
    this.ops.writes++;
    return own.map((d) => this.fromDoc(d.data()));
  }

  /**
   * One read: the account's count document, kept by every create and delete in the same commit
   * (an increment, no read). A count query would cost as little on GCP, but it scans on the
   * emulator (0.87 s at 30,000 destinations, measured), which made each registration slower as
   * the registry grew. An account from before the document existed has its count taken once
   * (the aggregation) and written on the condition that no create or delete came meanwhile.
   */
  async countAccount(account: string): Promise<number> {
    const ref = this.counts.doc(account);
    for (;;) {
      const snap = await ref.get();
      this.ops.reads++;
      const stored = snap.data() as DestinationCount | undefined;
      if (stored?.exact === true) return stored.count;
      const count = await this.countByQuery(account);
      const doc: DestinationCount = { count, exact: true };
      // A create or delete meanwhile changed the document (or made it): read again.
      const written = snap.exists ? await unlessChanged(() => ref.update(doc as unknown as DocumentData, { lastUpdateTime: snap.updateTime! })) : await createIfAbsent(() => ref.create(doc));
      if (written) {
        this.ops.writes++;
        return count;
      }
    }
  }

  private async countByQuery(account: string): Promise<number> {
    const query = this.accountQuery(account);
    if (!query) return (await this.listAccount(account)).length;
    const count = (await query.count().get()).data().count;
    // An aggregation is billed a read per 1,000 entries counted, at least one.
    this.ops.reads += Math.max(1, Math.ceil(count / 1000));
    return count;
  }

  private get counts() {
    return this.db.collection(COLLECTIONS.destinationCounts);
  }

  /** The account's count, one more or one less, in the commit that creates or deletes one of its destinations. */
  private countChange(destinationId: string, by: 1 | -1): [DocumentReference, DocumentData, { merge: true }] {
    return [this.counts.doc(splitDestinationId(destinationId).account), { count: FieldValue.increment(by) }, { merge: true }];
  }

  /**
   * What changed since `since` (a read time this method returned): the change log written
   * with every destination write, read with one query, then the changed documents. A
   * listener would cost nothing between changes on GCP, but the emulator answers every
   * write to a listened collection with a RESET and the whole collection again (measured:
   * 20 writes, 20 resets), which made 10,000 registrations O(D²) for every instance.
   */
  async changesSince(since: Date | undefined): Promise<DestinationChanges> {
    if (since === undefined) {
      // Where the log stands: the read time of one query, whatever it finds (billed one read at least).
      const snap = await this.changes.orderBy(FIRESTORE_QUERIES.destinationChanges.orderBy, 'desc').limit(1).get();
      this.ops.reads += 1;
      return { upserted: [], removed: [], readTime: snap.readTime.toDate() };
    }
    // A little overlap: a change read twice is applied twice, to the same result.
    const after = Timestamp.fromMillis(since.getTime() - CHANGE_OVERLAP_MS);
    const snap = await this.changes.where(FIRESTORE_QUERIES.destinationChanges.orderBy, '>', after).orderBy(FIRESTORE_QUERIES.destinationChanges.orderBy).get();
    this.ops.reads += Math.max(1, snap.size);
    // An entry carries the destination as written (or that it was deleted): the newest per destination is what stands.
    const newest = new Map<string, ChangeEntry>();
    for (const d of snap.docs) {
      const entry = d.data() as ChangeEntry;
      newest.set(entry.destinationId, entry);
    }
    const upserted: Destination[] = [];
    const removed: string[] = [];
    const unknown: string[] = [];
    for (const [id, entry] of newest) {
      if (entry.destination) upserted.push(this.fromDoc(entry.destination));
      else if (entry.removed) removed.push(id);
      // An entry written before entries carried the destination: the document itself, then.
      else unknown.push(id);
    }
    const docs = unknown.length > 0 ? await this.db.getAll(...unknown.map((id) => this.col.doc(id))) : [];
    this.ops.reads += docs.length;
    for (const d of docs) {
      if (d.exists) upserted.push(this.fromDoc(d.data()!));
      else removed.push(d.id);
    }
    return { upserted, removed, readTime: snap.readTime.toDate() };
  }

  private get changes() {
    return this.db.collection(COLLECTIONS.destinationChanges);
  }

  /**
   * The change log entry written with every destination write, in the same commit: the
   * document as written (`doc`, its secrets sealed) or, without one, that it was deleted. A
   * directory that reads the change log then needs no read of the destination itself.
   */
  private changeEntry(destinationId: string, doc: Destination | undefined): [DocumentReference, DocumentData] {
    const entry: ChangeEntry = { destinationId, at: FieldValue.serverTimestamp(), ...(doc ? { destination: doc } : { removed: true }) };
    return [this.changes.doc(), { ...entry, [FIRESTORE_TTL_FIELDS.destinationChanges.field]: new Date(Date.now() + CHANGE_KEEP_MS) }];
  }

  async put(destination: Destination): Promise<{ created: boolean }> {
    const ref = this.col.doc(destination.id);
    const doc = this.toDoc(destination);
    const stored = marked(doc);
    const commit = (create: boolean) => {
      const batch = this.db.batch();
      if (create) batch.create(ref, stored).set(...this.countChange(destination.id, 1));
      else batch.set(ref, stored);
      batch.set(...this.changeEntry(destination.id, doc));
      return batch.commit();
    };
    // A create first, so the answer says which it was without a read; one that exists is replaced.
    const created = await createIfAbsent(() => commit(true));
    if (!created) await commit(false);
    this.ops.writes += created ? 3 : 2;
    return { created };
  }

  /** With its change log entry in one commit; of many at once, exactly one deletes (adapters/firestore/write.ts). */
  async delete(id: string): Promise<boolean> {
    const existed = await deleteIfExists(this.db, this.col.doc(id), (batch) => batch.set(...this.changeEntry(id, undefined)).set(...this.countChange(id, -1)));
    if (existed) {
      // Billed as a delete (the destination) and two writes (its change log entry, its account's count).
      this.ops.deletes += 1;
      this.ops.writes += 2;
    }
    return existed;
  }

  /** Optimistically, with its change log entry in the same commit (adapters/firestore/write.ts): no transaction's lock. */
  async update(id: string, decide: (current: Destination | undefined) => Destination | undefined): Promise<Destination | undefined> {
    let createdHere = false;
    const { written, reads, writes } = await readDecideWrite(this.db, this.col.doc(id), decide, {
      decode: (data) => this.fromDoc(data),
      encode: (destination) => marked(this.toDoc(destination)),
      alongside: (batch, next, created) => {
        batch.set(...this.changeEntry(id, this.toDoc(next)));
        // A destination made by an update (none was there) counts in its account as a put's does.
        if (created) batch.set(...this.countChange(id, 1));
        createdHere = created;
      },
    });
    this.ops.reads += reads;
    this.ops.writes += writes * (createdHere ? 3 : 2);
    return written;
  }
}

/**
 * `destination-counts/<account>`: `count` moves with each create and delete; `exact` once it was
 * taken whole (before that, increments alone say nothing of destinations created earlier).
 */
interface DestinationCount {
  count: number;
  exact?: true;
  /** The default account's only: every one of its documents carries DEFAULT_ACCOUNT_MARK (listDefault). */
  listable?: true;
}

/** On the documents of `default`'s destinations, whose ids carry no account prefix to range over: what lists them. */
const DEFAULT_ACCOUNT_MARK = FIRESTORE_QUERIES.defaultAccountDestinations.orderBy;

/** The document as stored: a default-account destination's with its mark. */
function marked(doc: Destination): DocumentData {
  return splitDestinationId(doc.id).account === DEFAULT_ACCOUNT ? { ...doc, [DEFAULT_ACCOUNT_MARK]: true } : doc;
}

/** A change log entry: which destination changed, when (the commit's time), and to what. */
interface ChangeEntry {
  destinationId: string;
  at: FieldValue | Timestamp;
  /** The document as written, secrets sealed; absent in entries written before it was carried. */
  destination?: Destination;
  /** The destination was deleted. */
  removed?: true;
}

/** What a receiver credential is bound to: its destination and its field. */
function receiverContext(destinationId: string, path: string): string {
  return `herald:destination:${destinationId}:${path}`;
}

/** What a destination's sealed secrets are bound to (GCM additional data). */
function secretContext(destinationId: string): string {
  return `herald:destination:${destinationId}:secret`;
}
