/**
 * The console's only way to Herald: the same admin API that users call, with the same
 * scoping. The credential goes in `Authorization: Bearer`, never in a URL or a cookie, so a
 * forged cross-site request carries nothing (CSRF is impossible by construction).
 */

/** One named problem of a request, as the API lists them (`path` like `url`, `rate.min`, `eventTypes[0]`). */
export interface Issue {
  path: string;
  message: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly issues: Issue[] = [],
    readonly body: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

/**
 * Where the admin API is, from where the console is served: beside it. `<base>/admin/console`
 * (local mode, and the functions' shared URL on GCP) answers at `<base>/admin`; the admin
 * function's own Cloud Run URL (`https://…run.app/console`) at its root; `/console` at the root
 * of anything else (a local mount of the console alone) at `/admin`.
 */
export function apiBase(pathname = location.pathname, hostname = location.hostname): string {
  const at = pathname.indexOf('/console');
  const prefix = at < 0 ? '' : pathname.slice(0, at);
  if (prefix.endsWith('/admin') || hostname.endsWith('.run.app')) return prefix;
  return `${prefix}/admin`;
}

/** POST /ingest beside the admin function (test events with an account key holding `publish`). */
export function ingestUrl(): string {
  return `${apiBase().replace(/\/admin$/, '')}/ingest`;
}

let bearer: string | undefined;
let onUnauthorized: ((e: ApiError) => void) | undefined;

export function setCredential(token: string | undefined, unauthorized?: (e: ApiError) => void): void {
  bearer = token;
  onUnauthorized = unauthorized;
}

/** An id or other value as one path segment. */
export const seg = (s: string) => encodeURIComponent(s);

export async function call<T>(method: string, path: string, body?: unknown, options: { url?: string; headers?: Record<string, string>; auth?: boolean } = {}): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
  if (options.auth !== false && bearer) headers.authorization = `Bearer ${bearer}`;
  if (body !== undefined && !headers['content-type']) headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(options.url ?? `${apiBase()}${path}`, {
      method,
      headers,
      credentials: 'omit',
      cache: 'no-store',
      ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
    });
  } catch (e) {
    throw new ApiError(0, `Herald could not be reached (${e instanceof Error ? e.message : String(e)}): is it running?`);
  }
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = { error: text.slice(0, 300) };
  }
  if (!res.ok) {
    const obj = (parsed && typeof parsed === 'object' ? parsed : {}) as Record<string, unknown>;
    const message = typeof obj.error === 'string' ? obj.error : `${method} ${path} answered HTTP ${res.status}`;
    const issues = Array.isArray(obj.issues) ? (obj.issues as Issue[]) : [];
    const error = new ApiError(res.status, message, issues, obj);
    if (res.status === 401 && options.auth !== false) onUnauthorized?.(error);
    throw error;
  }
  return parsed as T;
}

export const get = <T>(path: string) => call<T>('GET', path);
export const post = <T>(path: string, body?: unknown) => call<T>('POST', path, body);

/** A query string from the values that are set. */
export function query(params: Record<string, string | number | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}

/** Issues grouped by the field they name: `rate.min` → `rate.min`, `eventTypes[2]` → `eventTypes`. */
export function issuesByField(issues: Issue[]): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const i of issues) {
    const key = i.path.replace(/\[\d+\]$/, '').replace(/\[\d+\]\./, '.') || 'body';
    (out[key] ??= []).push(i.message);
  }
  return out;
}
