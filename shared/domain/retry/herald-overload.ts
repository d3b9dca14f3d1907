import { z } from 'zod';
import { GRPC } from './grpc-status';

/**
 * Herald's own dependencies (its Firestore, its Pub/Sub) saying they are overloaded or out of
 * reach: not a failure of the destination being delivered to. Such an answer must never be
 * counted as an attempt, lower a success rate or use up a retry; Herald backs off and tries
 * again.
 */

/** gRPC codes of a service that could not take the call now: DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, UNAVAILABLE. */
export const OVERLOAD_GRPC_CODES: readonly number[] = [GRPC.DEADLINE_EXCEEDED, GRPC.RESOURCE_EXHAUSTED, GRPC.UNAVAILABLE];

const errorShape = z.looseObject({ code: z.union([z.number(), z.string()]).optional(), status: z.number().optional(), message: z.string().optional() });

/** Whether a thrown error is overload of Herald's own services (gRPC 4, 8, 14, or HTTP 503 from a REST fallback). */
export function isHeraldOverload(error: unknown): boolean {
  const parsed = errorShape.safeParse(error);
  if (!parsed.success) return false;
  const { code, status } = parsed.data;
  if (typeof code === 'number' && OVERLOAD_GRPC_CODES.includes(code)) return true;
  if (code === 'DEADLINE_EXCEEDED' || code === 'RESOURCE_EXHAUSTED' || code === 'UNAVAILABLE') return true;
  return status === 503 || code === 503;
}

/**
 * How long work stopped by Herald's overload waits before it is tried again: 10 s, ±20 % so
 * that what one overload stopped does not all come back in the same instant (`random` in [0, 1)).
 */
export function overloadBackoffMs(random: number): number {
  return Math.round(10_000 * (0.8 + 0.4 * random));
}
