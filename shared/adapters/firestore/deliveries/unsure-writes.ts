import { GRPC, grpcCode } from '../../../domain/retry/grpc-status';

/** Answers after which a commit may have landed, or may land yet, or may go through if tried again. */
export const UNSURE_CODES: readonly number[] = [GRPC.CANCELLED, GRPC.UNKNOWN, GRPC.DEADLINE_EXCEEDED, GRPC.RESOURCE_EXHAUSTED, GRPC.ABORTED, GRPC.INTERNAL, GRPC.UNAVAILABLE];

/** An error after which a write may have landed (its reply lost) or not. */
export function isUnsure(e: unknown): boolean {
  const code = grpcCode(e);
  return code !== undefined && UNSURE_CODES.includes(code);
}
