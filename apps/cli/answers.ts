import { Api, Credential, noAccountHint, refusalHint } from './credentials';
import { ApiError, ConnectError, Issue } from './errors';

/** What Herald's answers (and its silences) mean to the CLI: each failure as an error with what to do next. */

export interface Asked {
  api: Api;
  method: string;
  path: string;
  baseUrl: string;
  /** The credential sent, so a refusal can say which one to fix. */
  credential: Credential | undefined;
}

export function apiError(asked: Asked, res: Response, body: unknown, json: boolean): ApiError {
  const { method, path, baseUrl } = asked;
  const shaped = json && typeof body === 'object' && body !== null && typeof (body as { error?: unknown }).error === 'string';
  if (!shaped) {
    const type = res.headers.get('content-type') ?? 'no content type';
    return new ApiError(
      res.status,
      `${method} ${path} answered ${res.status} ${res.statusText} with ${json ? 'an unexpected body' : type}, not a Herald answer`,
      [],
      `is ${baseUrl} Herald's URL? set HERALD_URL or --url`,
    );
  }
  const b = body as { error: string; issues?: unknown; failed?: unknown };
  const issues: Issue[] = [];
  if (Array.isArray(b.issues)) {
    for (const i of b.issues as { path?: unknown; message?: unknown }[]) issues.push({ path: String(i?.path ?? ''), message: String(i?.message ?? '') });
  }
  if (Array.isArray(b.failed)) {
    for (const f of b.failed as { id?: unknown; error?: unknown }[]) issues.push({ path: String(f?.id ?? ''), message: String(f?.error ?? '') });
  }
  // Herald says "no account "x"; list them with GET /admin/accounts": the CLI has its own way to list them.
  const noAccount = res.status === 404 ? /^no account ("[^"]*")/.exec(b.error) : null;
  if (noAccount) return new ApiError(404, `no account ${noAccount[1]}`, issues, noAccountHint(asked.credential));
  return new ApiError(res.status, b.error, issues, hintFor(asked, res.status, b.error));
}

function hintFor({ api, baseUrl, credential }: Asked, status: number, message: string): string | undefined {
  if ((status === 401 || status === 403) && credential) return refusalHint(api, credential, status, message);
  if (status === 413) return 'send less data: the limits are in the README (HERALD_MAX_EVENT_BYTES)';
  if (status === 404 && api === 'admin') return undefined; // the command knows what was missing
  if (status === 404 || status === 405) return `is ${baseUrl} Herald's URL? set HERALD_URL or --url`;
  if (status >= 500) return 'Herald logged the details; retry, and check its log if it persists';
  return undefined;
}

export function unexpected(call: string, body: unknown): ApiError {
  return new ApiError(200, `${call} answered an unexpected body: ${JSON.stringify(body)?.slice(0, 200)}`, [], 'is the CLI the same version as Herald?');
}

export function objectOf(call: string, body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw unexpected(call, body);
  return body as Record<string, unknown>;
}

export function connectError(baseUrl: string, e: unknown, timeoutMs: number): ConnectError {
  const err = e as { name?: string; message?: string; cause?: { code?: string; message?: string; errors?: { code?: string }[] } };
  if (err.name === 'TimeoutError' || err.name === 'AbortError') {
    return new ConnectError(`no answer from ${baseUrl} within ${timeoutMs / 1000}s`, [], 'is Herald running and healthy? check its log; the request may or may not have been applied');
  }
  const code = err.cause?.code ?? err.cause?.errors?.[0]?.code;
  const detail = code ?? err.cause?.message ?? err.message ?? String(e);
  return new ConnectError(`cannot connect to ${baseUrl} (${detail})`, [], 'is Herald running? start it with npm start, or set HERALD_URL');
}

/**
 * A 404 said in the command's words (`what` was missing, `hint` where to look instead), and
 * a 409 (not in the state the call needs) given `conflict`, the command to run instead, as
 * its hint; an answer that already has a hint (no account, a refusal) is left as it is.
 */
export async function naming<T>(call: () => Promise<T>, missing: { what: string; hint: string }, conflict?: string): Promise<T> {
  try {
    return await call();
  } catch (e) {
    if (e instanceof ApiError && e.status === 404 && !e.hint) throw new ApiError(404, missing.what, e.issues, missing.hint);
    if (e instanceof ApiError && e.status === 409 && conflict !== undefined && !e.hint) throw new ApiError(409, e.message, e.issues, conflict);
    throw e;
  }
}

/** ` --account acme`, for the commands a hint suggests when the command acts in an account. */
export const accountFlag = (account: string | undefined) => (account === undefined ? '' : ` --account ${account}`);
