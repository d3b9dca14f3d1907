import { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from './api';

/** Loads something when its inputs change; `reload` asks again. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): { data?: T; error?: unknown; loading: boolean; reload: () => void } {
  const [state, setState] = useState<{ data?: T; error?: unknown; loading: boolean }>({ loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => live && setState({ data, loading: false }),
      (error: unknown) => live && setState({ error, loading: false }),
    );
    return () => {
      live = false;
    };
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { ...state, reload };
}

/** Runs an action, keeping its error and whether it is under way. */
export function useAction<A extends unknown[], T>(action: (...args: A) => Promise<T>): { run: (...args: A) => Promise<T | undefined>; busy: boolean; error?: unknown; clear: () => void } {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const run = async (...args: A) => {
    setBusy(true);
    setError(undefined);
    try {
      return await action(...args);
    } catch (e) {
      setError(e);
      return undefined;
    } finally {
      setBusy(false);
    }
  };
  return { run, busy, error, clear: () => setError(undefined) };
}

export function messageOf(error: unknown): string {
  if (error instanceof ApiError) {
    const prefix = error.status === 403 ? 'Not allowed: ' : error.status === 404 ? 'Not found: ' : error.status === 409 ? 'Conflict: ' : error.status >= 500 ? 'Herald could not do it: ' : '';
    return `${prefix}${error.message}`;
  }
  return error instanceof Error ? error.message : String(error);
}

/** What went wrong, said plainly, with each named problem of the request. */
export function ErrorBox({ error, title }: { error: unknown; title?: string }) {
  if (!error) return null;
  const issues = error instanceof ApiError ? error.issues : [];
  return (
    <div class="error" role="alert">
      <strong>{title ?? 'Something went wrong'}</strong>
      <p>{messageOf(error)}</p>
      {issues.length > 0 && (
        <ul>
          {issues.map((i) => (
            <li key={`${i.path}${i.message}`}>
              <code>{i.path}</code>: {i.message}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

export function Empty({ title, children }: { title: string; children?: ComponentChildren }) {
  return (
    <div class="empty">
      <p class="empty-title">{title}</p>
      {children && <div>{children}</div>}
    </div>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <p class="loading" role="status">
      Loading {what}…
    </p>
  );
}

/** A load in progress or failed: "Loading …" before its first answer, the error when it fails. */
export function LoadState({ load, what, failed }: { load: { data?: unknown; error?: unknown; loading: boolean }; what: string; failed: string }) {
  return (
    <>
      {load.loading && load.data === undefined && <Loading what={what} />}
      <ErrorBox error={load.error} title={failed} />
    </>
  );
}

/** What useAction gives a form or button: run it; while it runs, it is busy. */
type Runnable<T> = { run: () => Promise<T | undefined>; busy: boolean };

/** A form that runs an action when submitted and hands on its result (nothing when it failed: the action holds the error). */
export function ActionForm<T>({ action, onDone, children, ...rest }: { action: Runnable<T>; onDone: (result: T) => void; children: ComponentChildren; class?: string; 'aria-labelledby'?: string }) {
  return (
    <form
      {...rest}
      noValidate
      onSubmit={(e) => {
        e.preventDefault();
        void action.run().then((r) => r !== undefined && onDone(r));
      }}
    >
      {children}
    </form>
  );
}

/** A form's main button, off while its action runs. */
export const Submit = ({ busy, children }: { busy: boolean; children: ComponentChildren }) => (
  <button type="submit" class="primary" disabled={busy}>
    {children}
  </button>
);

/** A button that runs an action and hands on its result. */
export function RunButton<T>({ action, onDone, children, disabled, class: cls }: { action: Runnable<T>; onDone: (result: T) => void; children: ComponentChildren; disabled?: boolean; class?: string }) {
  return (
    <button type="button" class={cls} disabled={disabled || action.busy} onClick={() => void action.run().then((r) => r !== undefined && onDone(r))}>
      {children}
    </button>
  );
}

/** An input's or select's handler that passes its value on. */
export const onValue = (set: (v: string) => void) => (e: Event) => set((e.target as HTMLInputElement).value);

/** A message read out by screen readers when it changes. */
export function Notice({ children, kind = 'ok' }: { children?: ComponentChildren; kind?: 'ok' | 'warn' }) {
  return (
    <div class={`notice ${kind}`} role="status" aria-live="polite">
      {children}
    </div>
  );
}

/** A wide table that scrolls sideways on a narrow screen, reachable with the keyboard. */
export function TableWrap({ label, children }: { label: string; children: ComponentChildren }) {
  return (
    <div class="table-wrap" role="region" aria-label={label} tabIndex={0}>
      {children}
    </div>
  );
}

/** A table of records: column headings (an empty one is an actions column, named for screen readers) and its rows. */
export function DataTable({ label, columns, children }: { label: string; columns: string[]; children: ComponentChildren }) {
  return (
    <TableWrap label={label}>
      <table>
        <thead>
          <tr>
            {columns.map((c) => (
              <th scope="col" key={c || 'actions'}>
                {c || <span class="sr-only">Actions</span>}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </TableWrap>
  );
}

/** Cursor paging: the cursors that led to the page shown (none: the first page). */
export function useCursors(): { cursor?: string; pages: number; next: (c: string) => void; back: () => void; reset: () => void } {
  const [cursors, setCursors] = useState<string[]>([]);
  return {
    ...(cursors.length ? { cursor: cursors[cursors.length - 1] } : {}),
    pages: cursors.length,
    next: (c) => setCursors([...cursors, c]),
    back: () => setCursors(cursors.slice(0, -1)),
    reset: () => setCursors([]),
  };
}

/** Previous / next page buttons, shown when there is more than one page. */
export function Pager({ paging, nextCursor }: { paging: ReturnType<typeof useCursors>; nextCursor?: string }) {
  if (paging.pages === 0 && !nextCursor) return null;
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" disabled={paging.pages === 0} onClick={paging.back}>
        Previous page
      </button>
      <span>Page {paging.pages + 1}</span>
      <button type="button" disabled={!nextCursor} onClick={() => nextCursor && paging.next(nextCursor)}>
        Next page
      </button>
    </nav>
  );
}

/** One number of a row of tiles (inside a `<dl class="tiles">`). */
export function Tile({ label, testId, children }: { label: string; testId?: string; children: ComponentChildren }) {
  return (
    <div class="tile">
      <dt>{label}</dt>
      <dd data-testid={testId}>{children}</dd>
    </div>
  );
}

export function Field({ id, label, hint, errors, children }: { id: string; label: string; hint?: string; errors?: string[]; children: ComponentChildren }) {
  return (
    <div class={`field${errors?.length ? ' invalid' : ''}`}>
      <label for={id}>{label}</label>
      {children}
      {hint && (
        <p class="hint" id={`${id}-hint`}>
          {hint}
        </p>
      )}
      {errors?.map((e) => (
        <p class="field-error" id={`${id}-error`} key={e}>
          {e}
        </p>
      ))}
    </div>
  );
}

/** A value shown once (a new secret or key), with a copy button. */
export function Secret({ label, value }: { label: string; value: string }) {
  const [copied, setCopied] = useState(false);
  const ref = useRef<HTMLInputElement>(null);
  useEffect(() => ref.current?.focus(), []);
  return (
    <div class="secret" role="group" aria-label={label}>
      <p>
        <strong>{label}</strong> — shown this once; Herald keeps no readable copy.
      </p>
      <input ref={ref} readOnly value={value} aria-label={label} data-testid="secret-value" onFocus={(e) => (e.target as HTMLInputElement).select()} />
      <button
        type="button"
        onClick={() => {
          void navigator.clipboard?.writeText(value).then(() => setCopied(true), () => undefined);
        }}
      >
        {copied ? 'Copied' : 'Copy'}
      </button>
    </div>
  );
}

/** A button that asks once more before doing something that cannot be undone. */
export function ConfirmButton({ label, confirm, onConfirm, busy, class: cls }: { label: string; confirm: string; onConfirm: () => void; busy?: boolean; class?: string }) {
  const [asking, setAsking] = useState(false);
  if (!asking) {
    return (
      <button type="button" class={cls} disabled={busy} onClick={() => setAsking(true)}>
        {label}
      </button>
    );
  }
  return (
    <span class="confirm" role="group" aria-label={confirm}>
      <span>{confirm}</span>
      <button
        type="button"
        class="danger"
        autoFocus
        onClick={() => {
          setAsking(false);
          onConfirm();
        }}
      >
        Yes, {label.toLowerCase()}
      </button>
      <button type="button" onClick={() => setAsking(false)}>
        Cancel
      </button>
    </span>
  );
}

export function fmtTime(iso: string | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
}

export function fmtRate(r: number | undefined): string {
  return r === undefined ? '—' : `${(r * 100).toFixed(r === 1 || r === 0 ? 0 : 1)} %`;
}

export function StatusBadge({ status }: { status: string }) {
  return <span class={`badge badge-${status.toLowerCase().replace(/_/g, '-')}`}>{status.replace(/_/g, ' ').toLowerCase()}</span>;
}

/** `#/path?x=1` links. */
/** A datetime-local input's value (local time, no zone) as ISO 8601; empty stays empty. */
export const localToIso = (local: string): string => (local ? new Date(local).toISOString() : '');

export const href = (path: string, params: Record<string, string | undefined> = {}) => {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v) q.set(k, v);
  const s = q.toString();
  return `#${path}${s ? `?${s}` : ''}`;
};
