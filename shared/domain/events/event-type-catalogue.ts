import { createHash } from 'node:crypto';

/**
 * The shape of an account's event-type catalogue (the console's Event types page): up to
 * CATALOGUE_SHARDS documents, each a map of types. New types go into the first document with
 * room, so one write records a round's new types of an account (a second document is used only
 * once the first is full), and no document approaches Firestore's 1 MiB. A type seen again is
 * rewritten where it is. Pure: the sizes decide, the store and the clock are elsewhere.
 */
export const CATALOGUE_SHARDS = 8;
/** A sample kept whole up to this (its JSON, bytes), as long as its shard holds little. */
export const SAMPLE_MAX_BYTES = 8 * 1024;
/** Past FULL_SAMPLES_BYTES in a shard, a new sample is cut to this. */
export const SMALL_SAMPLE_BYTES = 1024;
/** What a shard's full-size samples may take together; after it, samples are small. */
export const FULL_SAMPLES_BYTES = 256 * 1024;
/**
 * What a shard may hold in all: far below Firestore's 1 MiB, which leaves room for another
 * reconciler adding types to the same shard unknown to this one. A type that does not fit is
 * not catalogued (a warning says so): at ≥ 1 KB per type, about 5,000 types per account.
 */
export const SHARD_MAX_BYTES = 640 * 1024;

/** A type may hold `/` and be 1 KB long: its hash is its key in a document (and, from before the catalogue, named its own document). */
export function typeHash(type: string): string {
  return createHash('sha256').update(type).digest('hex').slice(0, 32);
}

/** What one type takes in its shard document: its key, the type, when seen, the sample's JSON, and Firestore's per-field overhead. */
export function entryBytes(entry: { type: string; lastSeenAt: string; sample: string }): number {
  return 32 + Buffer.byteLength(entry.type) + Buffer.byteLength(entry.lastSeenAt) + Buffer.byteLength(entry.sample) + 64;
}

/** How big a sample a document already holding `shardBytes` gets. */
export function sampleBudget(shardBytes: number): number {
  return shardBytes + SAMPLE_MAX_BYTES <= FULL_SAMPLES_BYTES ? SAMPLE_MAX_BYTES : SMALL_SAMPLE_BYTES;
}
