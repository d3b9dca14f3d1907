/** The CLI's failures, each with the exit code it ends the process with. */

export const EXIT = {
  ok: 0,
  /** Herald answered with an error (4xx/5xx), or answered something unexpected. */
  api: 1,
  /** Bad arguments or options: nothing was sent. */
  usage: 2,
  /** Herald could not be reached (connection refused, DNS, timeout). */
  connect: 3,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

export interface Issue {
  path: string;
  message: string;
}

export abstract class CliError extends Error {
  abstract readonly exitCode: ExitCode;
  constructor(
    message: string,
    readonly issues: Issue[] = [],
    /** What to do next, printed after the message. */
    readonly hint?: string,
  ) {
    super(message);
  }
}

export class UsageError extends CliError {
  readonly exitCode = EXIT.usage;
}

export class ApiError extends CliError {
  readonly exitCode = EXIT.api;
  constructor(
    readonly status: number,
    message: string,
    issues: Issue[] = [],
    hint?: string,
  ) {
    super(message, issues, hint);
  }
}

export class ConnectError extends CliError {
  readonly exitCode = EXIT.connect;
}
