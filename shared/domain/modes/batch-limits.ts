/**
 * The bounds of a destination's `batch` (batching.ts holds the rules and the schema). In a
 * module that imports nothing, so the console can bundle them for the browser and check its
 * form against the same numbers the API does, rather than keep a copy of its own.
 */
export const BATCH_LIMITS = {
  minEvents: 2,
  maxEvents: 1000,
  minWaitMs: 100,
  maxWaitMs: 60_000,
  minBytes: 1024,
  /** A webhook body, and Pub/Sub's 10 MB publish request with room to spare; also the default. */
  maxBytes: 1024 * 1024,
} as const;
