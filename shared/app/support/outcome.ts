import type { ValidationIssue } from '../../domain/events/event';

/**
 * What a use case answers, named by what it means rather than by an HTTP status: the entry
 * points in functions/ turn each kind into its status in one place (functions/http.ts).
 */

/** A refusal's body: what to do, each problem by field, and the id of the log line behind a fault. */
export type Problem = { error: string; issues?: ValidationIssue[]; errorId?: string };

/** Done, with an answer: read or replaced (`ok`), made (`created`), or taken and going on (`accepted`). */
export type Success<T> = { kind: 'ok' | 'created' | 'accepted'; body: T };

/** Done, with nothing to say (deleted, revoked). */
export type Done = { kind: 'done' };

/** Refused: the request (`invalid`), the caller's rights (`forbidden`), what it names (`not-found`), the state it met (`conflict`), or Herald, for now (`unavailable`). */
export type Refusal<B extends Problem = Problem> = { kind: 'invalid' | 'forbidden' | 'not-found' | 'conflict' | 'unavailable'; body: B; retryAfterSeconds?: number };

/** A caller to wait `retryAfterSeconds` before it asks again. */
export type TooMany<B> = { kind: 'too-many'; retryAfterSeconds: number; body: B };

export type Outcome<T> = Success<T> | Done | Refusal;

/** Every kind of outcome, as an entry point maps it: also the credential refused (`unauthenticated`) and the request too big to read (`too-large`). */
export type OutcomeKind = Outcome<unknown>['kind'] | TooMany<unknown>['kind'] | 'unauthenticated' | 'too-large';

/** What an entry point reads of any outcome. */
export type AnyOutcome = { kind: OutcomeKind; body?: unknown; retryAfterSeconds?: number };
