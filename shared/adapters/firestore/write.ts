import { DocumentData, DocumentReference, FieldPath, FieldValue, Firestore, Timestamp, WriteBatch } from '@google-cloud/firestore';
import { GRPC, grpcCode } from '../../domain/retry/grpc-status';
import { WriteContentionError } from '../../ports/deliveries';
import { isUnsure } from './deliveries/unsure-writes';
import { errorMessage } from '../../domain/error-message';

/**
 * How the stores write a document under a condition: create it only if absent
 * (`createIfAbsent`), change it only if present (`ifPresent`, `deleteIfExists`), read it and
 * decide in a transaction (`transactOne`), or read, decide and write optimistically
 * (`readDecideWrite`).
 *
 * The last is for documents several callers may write at once. A transaction takes a lock on
 * the document it reads: the emulator serialises contended ones for seconds (20 at once on one
 * document: 7.6 s, and some end ABORTED "Transaction lock timeout"), and real Firestore makes a
 * contended one wait or retry too. Optimistic writes instead: read, decide, and write on the
 * condition that the document is still the version read (`lastUpdateTime`, or absence for a
 * create); a writer that lost the race reads again and decides again. Measured on the
 * emulator: 20 at once on one document in under 0.5 s, exact.
 */

/**
 * Runs a write that creates a document (`create`, or a batch holding one): whether it did.
 * False, and nothing written, when the document exists already; any other error is thrown.
 */
export function createIfAbsent(write: () => Promise<unknown>): Promise<boolean> {
  return writtenUnless(GRPC.ALREADY_EXISTS, write);
}

/**
 * Runs a write that needs its document to exist (`update`, a delete with `exists`): whether it
 * did. False, and nothing written, when the document is not there; any other error is thrown.
 */
export function ifPresent(write: () => Promise<unknown>): Promise<boolean> {
  return writtenUnless(GRPC.NOT_FOUND, write);
}

/**
 * Runs a write on the condition that the document is the version read (`lastUpdateTime`):
 * whether it did. False, and nothing written, when another writer changed it meanwhile.
 */
export function unlessChanged(write: () => Promise<unknown>): Promise<boolean> {
  return writtenUnless(GRPC.FAILED_PRECONDITION, write);
}

/** A write's precondition failing with `refusal` is an answer (false), not an error. */
async function writtenUnless(refusal: number, write: () => Promise<unknown>): Promise<boolean> {
  try {
    await write();
    return true;
  } catch (e) {
    if (grpcCode(e) === refusal) return false;
    throw e;
  }
}

/** What a transaction does with the one document it read. */
export type TransactionWrite = { set: DocumentData } | { update: DocumentData } | { delete: true };

/**
 * Reads one document in a Firestore transaction, lets `decide` say what to answer and what,
 * if anything, to write, and commits that. Firestore runs the transaction again when another
 * writer got in between, so `decide` must be pure. `reads`: how many times the document was
 * read (one per try), for the stores that count each try.
 */
export async function transactOne<R>(
  db: Firestore,
  ref: DocumentReference,
  decide: (current: DocumentData | undefined) => { result: R; write?: TransactionWrite | undefined },
): Promise<{ result: R; reads: number }> {
  let reads = 0;
  const result = await db.runTransaction(async (tx) => {
    const snap = await tx.get(ref);
    reads++;
    const { result, write } = decide(snap.exists ? snap.data() : undefined);
    if (write && 'set' in write) tx.set(ref, write.set);
    else if (write && 'update' in write) tx.update(ref, write.update);
    else if (write) tx.delete(ref);
    return result;
  });
  return { result, reads };
}

/** Another writer got there first: the document is not the version read (or now exists, or is gone). */
function lostRace(e: unknown): boolean {
  const code = grpcCode(e);
  return code === GRPC.FAILED_PRECONDITION || code === GRPC.ALREADY_EXISTS || code === GRPC.NOT_FOUND || code === GRPC.ABORTED;
}

export interface RetryOptions {
  /** Give up (WriteContentionError) once this long has passed since the first try. */
  budgetMs: number;
  /** The pause before the second try; each later one doubles, up to maxPauseMs, all with full jitter. */
  firstPauseMs: number;
  maxPauseMs: number;
  /**
   * Also try again after an answer that leaves it unsure whether the write landed (a lost reply:
   * DEADLINE_EXCEEDED, UNAVAILABLE…): the next read shows it, as the Firestore client's retry of a
   * transaction does. Only for decisions that know their own write when they read it.
   */
  unsure?: boolean;
  random?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

/**
 * Contention on the admin path is a few writers at once: each retry is one read and one
 * commit (~10–30 ms on the emulator). 5 s is far beyond what 20 writers at once need, and
 * well inside the admin API's 60 s request budget.
 */
export const DEFAULT_RETRY: RetryOptions = { budgetMs: 5_000, firstPauseMs: 10, maxPauseMs: 200 };

/** DEFAULT_RETRY, and again after a lost reply: what the stores that were transactions keep doing (records, rate leases, quota slices). */
export const AS_TRANSACTION_RETRY: RetryOptions = { ...DEFAULT_RETRY, unsure: true };

/** How a store turns its values into documents and back. */
export interface DocumentCodec<T> {
  decode(data: DocumentData): T;
  encode(value: T): DocumentData;
}

/** A document read and written as it is stored: the domain reads and writes it whole. */
export const AS_STORED: DocumentCodec<DocumentData> = { decode: (data) => data, encode: (doc) => doc };

export interface ReadDecideWrite<T> extends DocumentCodec<T> {
  /** Writes committed with the document's, atomically (a change log entry): only when it is written; `created`: there was none before. */
  alongside?(batch: WriteBatch, next: T, created: boolean): void;
}

export interface Written<T> {
  /** What was written; undefined when `decide` wanted nothing written. */
  written: T | undefined;
  /** Documents read and written, for the operation counter (a lost race costs a read each time). */
  reads: number;
  writes: number;
}

/**
 * Reads one document, lets `decide` compute its successor, and writes that only if the
 * document is still as read: a create if it was absent, else a whole replacement under a
 * `lastUpdateTime` precondition (fields the successor lacks are deleted). A lost race reads
 * again and decides again (`decide` must be pure), after a jittered pause; past the budget
 * it throws WriteContentionError. Callers in this process are queued per document first, so
 * they do not race each other: only other instances' writes are raced.
 */
export function readDecideWrite<T>(
  db: Firestore,
  ref: DocumentReference,
  decide: (current: T | undefined) => T | undefined,
  how: ReadDecideWrite<T>,
  retry: RetryOptions = DEFAULT_RETRY,
): Promise<Written<T>> {
  return oneAtATime(db, ref.path, async () => {
    let reads = 0;
    const outcome = await retried(ref.path, retry, async () => {
      const snap = await ref.get();
      reads++;
      const stored = snap.exists ? snap.data()! : undefined;
      const next = decide(stored === undefined ? undefined : how.decode(stored));
      if (next === undefined) return { written: undefined, writes: 0 };
      const batch = db.batch();
      const doc = how.encode(next);
      if (stored === undefined) batch.create(ref, doc);
      else {
        const [field, value, ...rest] = replacement(stored, doc);
        batch.update(ref, field, value, ...rest, { lastUpdateTime: snap.updateTime! });
      }
      how.alongside?.(batch, next, stored === undefined);
      await batch.commit();
      return { written: next, writes: 1 };
    });
    return { written: outcome.written, reads, writes: outcome.writes };
  });
}

/** What an optimistic write over several documents (readManyDecideWrite) reads and writes through. */
export interface OptimisticDocuments {
  /** The documents as they are now (undefined: absent), remembered for the commit's preconditions. */
  getAll(refs: readonly DocumentReference[]): Promise<(DocumentData | undefined)[]>;
  /**
   * `doc` replaces the document if it is still as read (a create if it was read absent); a
   * document not read is created, and the commit fails if it exists (NewDocumentExists).
   */
  put(ref: DocumentReference, doc: DocumentData): void;
}

/** A document readManyDecideWrite was to create unread exists: nothing was written. */
export class NewDocumentExists extends Error {
  constructor() {
    super('a document to be created exists already');
  }
}

/**
 * An optimistic transaction over several documents: `attempt` reads through `io` and puts
 * what it decides, committed in one batch only if every document it replaces or creates is
 * still as read. A lost race reads again and decides again (`attempt` may run more than once,
 * so it must act on nothing else), after a jittered pause, until the budget runs out
 * (WriteContentionError). No lock is taken: a Firestore transaction on a contended document
 * waits for or aborts its rivals (on the emulator, seconds each), where a lost race here costs
 * one more read of what it read. An attempt that put a document it had not read, which
 * exists, ends in NewDocumentExists rather than a retry: the caller decides again, reading it.
 */
export function readManyDecideWrite<R>(db: Firestore, what: string, attempt: (io: OptimisticDocuments) => Promise<R>, retry: RetryOptions = DEFAULT_RETRY): Promise<{ result: R; reads: number; writes: number }> {
  let reads = 0;
  return retried(what, retry, async () => {
    const seen = new Map<string, { data?: DocumentData; updateTime?: Timestamp }>();
    const batch = db.batch();
    let writes = 0;
    let unread = false;
    const io: OptimisticDocuments = {
      getAll: async (refs) => {
        if (refs.length === 0) return [];
        const snaps = await db.getAll(...refs);
        reads += refs.length;
        return snaps.map((snap) => {
          const data = snap.exists ? snap.data() : undefined;
          seen.set(snap.ref.path, { ...(data ? { data, updateTime: snap.updateTime! } : {}) });
          return data;
        });
      },
      put: (ref, doc) => {
        writes++;
        const was = seen.get(ref.path);
        if (!was) unread = true;
        if (!was?.data) return void batch.create(ref, doc);
        const [field, value, ...rest] = replacement(was.data, doc);
        batch.update(ref, field, value, ...rest, { lastUpdateTime: was.updateTime! });
      },
    };
    const result = await attempt(io);
    if (writes > 0) {
      try {
        await batch.commit();
      } catch (e) {
        if (unread && grpcCode(e) === GRPC.ALREADY_EXISTS) throw new NewDocumentExists();
        throw e;
      }
    }
    return { result, reads, writes };
  });
}

/**
 * Deletes the document if it exists, with `alongside` in the same commit: whether it did.
 * No read and no lock: the `exists` precondition makes exactly one of many concurrent
 * deletes succeed, and the others answer NOT_FOUND at once.
 */
export function deleteIfExists(db: Firestore, ref: DocumentReference, alongside?: (batch: WriteBatch) => void): Promise<boolean> {
  return oneAtATime(db, ref.path, () => {
    const batch = db.batch();
    batch.delete(ref, { exists: true });
    alongside?.(batch);
    return ifPresent(() => batch.commit());
  });
}

/**
 * The field-by-field update that turns `stored` into `doc`: every field of `doc` set whole
 * (a map replaces the map), every field only `stored` has deleted. Field names go as
 * FieldPaths, so a name with a dot is one field, not a path. As `set`, an undefined value
 * leaves the field out.
 */
function replacement(stored: DocumentData, doc: DocumentData): [FieldPath, unknown, ...unknown[]] {
  const args: unknown[] = [];
  for (const [field, value] of Object.entries(doc)) if (value !== undefined) args.push(new FieldPath(field), value);
  for (const field of Object.keys(stored)) if (doc[field] === undefined) args.push(new FieldPath(field), FieldValue.delete());
  const [field, value, ...rest] = args;
  // Herald's documents always have fields (an id at least).
  if (!(field instanceof FieldPath)) throw new Error('a document with no fields cannot replace another');
  return [field, value, ...rest];
}

/**
 * Tries before the budget can end them: a decision given up is costly where it follows a send
 * (a batch whose outcome could not be written goes back and is sent again), and one slow
 * commit is not contention.
 */
const MIN_TRIES = 3;

async function retried<R>(what: string, options: RetryOptions, attempt: () => Promise<R>): Promise<R> {
  const random = options.random ?? Math.random;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const start = Date.now();
  for (let tries = 1; ; tries++) {
    try {
      return await attempt();
    } catch (e) {
      if (!lostRace(e) && !(options.unsure && isUnsure(e))) throw e;
      const elapsed = Date.now() - start;
      // A store slow enough to spend the budget in one or two tries (a busy emulator: 5–12 s a commit) gets a third.
      if (elapsed >= options.budgetMs && tries >= MIN_TRIES) throw new WriteContentionError(what, tries, elapsed, errorMessage(e));
      await sleep(random() * Math.min(options.maxPauseMs, options.firstPauseMs * 2 ** (tries - 1)));
    }
  }
}

/**
 * Per process and document, one write at a time, in arrival order: many requests of one
 * instance for one document wait their turn here instead of racing in Firestore, where each
 * lost race costs a read and a commit. Keyed by the Firestore client too: two projects in
 * one process (tests) are two sets of documents.
 */
const queues = new WeakMap<Firestore, Map<string, Promise<unknown>>>();

function oneAtATime<R>(db: Firestore, path: string, work: () => Promise<R>): Promise<R> {
  let byPath = queues.get(db);
  if (!byPath) queues.set(db, (byPath = new Map()));
  const before = byPath.get(path) ?? Promise.resolve();
  const mine = before.then(work, work);
  // What follows waits for this one to settle, not to succeed; the entry goes with the last writer.
  const tail = mine.then(
    () => undefined,
    () => undefined,
  );
  byPath.set(path, tail);
  void tail.then(() => {
    if (byPath.get(path) === tail) byPath.delete(path);
  });
  return mine;
}
