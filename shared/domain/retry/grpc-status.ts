/**
 * gRPC status codes (https://grpc.github.io/grpc/core/md_doc_statuscodes.html): the one table
 * for every answer Herald reads them from — Firestore's, Pub/Sub's, a topic destination's.
 */
export const GRPC = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;

const NAMES = new Map<number, string>(Object.entries(GRPC).map(([name, code]) => [code, name]));

/** The code's name (`6` → `ALREADY_EXISTS`); `UNKNOWN` for a number outside the table. */
export function grpcName(code: number): string {
  return NAMES.get(code) ?? 'UNKNOWN';
}

/** The gRPC status code a thrown error carries, if it carries a numeric one. */
export function grpcCode(e: unknown): number | undefined {
  const code = (e as { code?: unknown } | undefined)?.code;
  return typeof code === 'number' ? code : undefined;
}
