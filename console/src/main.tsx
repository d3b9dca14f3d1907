import 'uplot/dist/uPlot.min.css';
import './app.css';
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, call, get, setCredential } from './api';
import { applyTheme, kindOf, linkIdOf, loadSession, onPortalPage, saveSession, Session } from './session';
import { Account, PortalSession } from './types';
import { ErrorBox, href, messageOf, onValue } from './ui';
import { Overview } from './pages/overview';
import { Accounts, AccountDetail } from './pages/accounts';
import { DestinationForm } from './pages/destination-form';
import { Destinations } from './pages/destinations';
import { DestinationDetail } from './pages/destination-detail';
import { DeliveryLog } from './pages/log';
import { QueuedDead } from './pages/queued';
import { Replays } from './pages/replays';
import { EventTypes } from './pages/event-types';
import { Usage } from './pages/usage';

/** The route in the fragment: `#/destinations/orders?x=1` → path and params. */
function parseHash(hash = location.hash): { path: string; params: URLSearchParams } {
  const raw = hash.replace(/^#/, '') || '/';
  const [path = '/', q = ''] = raw.split('?', 2);
  return { path: path.startsWith('/') ? path : `/${path}`, params: new URLSearchParams(q) };
}

function useRoute() {
  const [route, setRoute] = useState(parseHash());
  useEffect(() => {
    const on = () => {
      // A portal link opened in a tab already showing the console: start afresh with it.
      if (location.hash.startsWith('#portal=')) location.reload();
      else setRoute(parseHash());
    };
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return route;
}

/** A portal link's token, taken from the fragment and removed from the address bar at once. */
function takePortalToken(): string | undefined {
  const m = /^#portal=([^&]+)/.exec(location.hash);
  if (!m) return undefined;
  history.replaceState(null, '', `${location.pathname}${location.search}#/`);
  return decodeURIComponent(m[1]!);
}

/**
 * Why the portal shows no data: a link refused at the exchange (its `reason`), a portal session
 * Herald stopped accepting (`session`), or, on the portal's page, no link to open at all.
 */
type Refusal = { reason?: string; message: string; returnUrl?: string; session?: boolean };

function refusalText({ reason, session }: Refusal): [string, string] {
  const expired = reason === 'expired';
  if (session && expired) return ['This session has expired', 'Portal sessions last as long as the link that opened them. Go back and open the portal again.'];
  if (session) return ['This session has ended', 'It was ended where it was given: its link or session was revoked, or the account closed. Go back and open the portal again.'];
  if (expired) return ['This link has expired', 'Portal links work for a short time only. Go back and open the portal again to get a fresh link.'];
  if (reason === 'revoked') return ['This link no longer works', 'It was revoked where it was given. Go back and open the portal again to get a fresh link.'];
  if (reason === 'used-up') return ['This link has been used up', 'It has opened as many sessions as it may. Go back and open the portal again to get a fresh link.'];
  if (reason === 'busy') return ['The portal is busy', 'Too many portal sessions are being opened just now. Wait a minute, then go back and open the portal again.'];
  if (reason === 'no-read') return ['This link shows nothing', 'It lets you change things but not look at them, so this page has nothing to show. Ask for a link that can read.'];
  if (reason === 'no-link') return ['Open the portal from your link', 'This page shows a portal opened from a link. Go back to where you got the link and open it again.'];
  if (reason === 'left') return ['You have left the portal', 'Open it again from where you got the link.'];
  return ['This link is not valid', 'The link may have been changed or cut short when it was copied. Go back and open the portal again.'];
}

/** How often a link refused for being opened too often just now (429) is tried again, and the longest wait taken. */
const BUSY_TRIES = 3;
const BUSY_WAIT_MAX_S = 60;

function Refused({ refusal }: { refusal: Refusal }) {
  const [title, text] = refusalText(refusal);
  useEffect(() => {
    document.title = `${title} · Herald console`;
    document.getElementById('main')?.focus();
  }, [title]);
  return (
    <main id="main" class="refused" tabIndex={-1} data-testid="refused">
      <h1>{title}</h1>
      <p>{text}</p>
      <p class="muted">{refusal.message}</p>
      {refusal.returnUrl && /^https?:\/\//.test(refusal.returnUrl) && (
        <p>
          <a class="button primary" href={refusal.returnUrl} data-testid="return-link">
            Go back
          </a>
        </p>
      )}
    </main>
  );
}

function SignIn({ onSignedIn, notice }: { onSignedIn: (s: Session) => void; notice?: string }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    const t = token.trim();
    if (!t) {
      setError(new Error('Enter the admin token or an account key.'));
      return;
    }
    setBusy(true);
    setError(undefined);
    try {
      setCredential(t);
      const page = await get<{ accounts: Account[] }>('/accounts?limit=100');
      const kind = kindOf(t);
      const first = page.accounts[0];
      onSignedIn(kind === 'operator' ? { token: t, kind, account: 'default' } : { token: t, kind, ...(first ? { account: first.id, accountName: first.name } : {}) });
    } catch (err) {
      setCredential(undefined);
      setError(err instanceof ApiError && err.status === 401 ? new Error(`Herald refused this credential: ${err.message}`) : err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main id="main" class="signin" tabIndex={-1}>
      <h1>Sign in to the Herald console</h1>
      {notice && <p class="notice warn">{notice}</p>}
      <form onSubmit={(e) => void submit(e)}>
        <div class="field">
          <label for="token">Admin token or account key</label>
          <input id="token" name="token" type="password" autoComplete="off" spellcheck={false} value={token} onInput={onValue(setToken)} aria-describedby="token-hint" />
          <p class="hint" id="token-hint">
            Kept in this tab only, and forgotten when you close it or sign out. <code>npm start</code> prints the local admin token.
          </p>
        </div>
        <ErrorBox error={error} title="Could not sign in" />
        <button type="submit" class="primary" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}

function AccountPicker({ session, path, onPick }: { session: Session; path: string; onPick: (id: string, name?: string) => void }) {
  const [accounts, setAccounts] = useState<Account[]>([]);
  useEffect(() => {
    get<{ accounts: Account[] }>('/accounts?limit=500').then(
      (p) => setAccounts(p.accounts),
      () => undefined,
    );
  }, [session.token, path]);
  const current = session.account ?? 'default';
  const list = accounts.some((a) => a.id === current) ? accounts : [{ id: current, name: current }, ...accounts];
  return (
    <div class="picker">
      <label for="account-picker">Account</label>
      <select id="account-picker" value={current} onChange={(e) => {
        const id = (e.target as HTMLSelectElement).value;
        onPick(id, accounts.find((a) => a.id === id)?.name);
      }}>
        {list.map((a) => (
          <option key={a.id} value={a.id}>
            {a.name && a.name !== a.id ? `${a.name} (${a.id})` : a.id}
          </option>
        ))}
      </select>
    </div>
  );
}

const NAV: { path: string; label: string; operatorOnly?: boolean }[] = [
  { path: '/', label: 'Overview' },
  { path: '/accounts', label: 'Accounts', operatorOnly: true },
  { path: '/destinations', label: 'Destinations' },
  { path: '/log', label: 'Delivery log' },
  { path: '/event-types', label: 'Event types' },
  { path: '/queued', label: 'Queued & dead' },
  { path: '/replays', label: 'Replays' },
  { path: '/usage', label: 'Usage' },
];

function Shell({ session, setSession, signOut }: { session: Session; setSession: (s: Session) => void; signOut: () => void }) {
  const { path, params } = useRoute();
  const account = session.account ?? 'default';
  const ctx = { session, account };
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  let page;
  let title = 'Overview';
  if (parts[0] === 'accounts' && session.kind === 'operator') {
    title = 'Accounts';
    page = parts[1] ? <AccountDetail ctx={ctx} id={parts[1]} /> : <Accounts ctx={ctx} onOpen={(id, name) => setSession({ ...session, account: id, ...(name ? { accountName: name } : {}) })} />;
  } else if (parts[0] === 'destinations') {
    title = 'Destinations';
    if (parts[1] === 'new') page = <DestinationForm ctx={ctx} />;
    else if (parts[1] && parts[2] === 'edit') page = <DestinationForm ctx={ctx} id={parts[1]} />;
    else if (parts[1]) page = <DestinationDetail ctx={ctx} id={parts[1]} />;
    else page = <Destinations ctx={ctx} />;
  } else if (parts[0] === 'log') {
    title = 'Delivery log';
    page = <DeliveryLog ctx={ctx} params={params} />;
  } else if (parts[0] === 'event-types') {
    title = 'Event types';
    page = <EventTypes ctx={ctx} />;
  } else if (parts[0] === 'queued') {
    title = 'Queued & dead';
    page = <QueuedDead ctx={ctx} params={params} />;
  } else if (parts[0] === 'replays') {
    title = 'Replays';
    page = <Replays ctx={ctx} />;
  } else if (parts[0] === 'usage') {
    title = 'Usage';
    page = <Usage ctx={ctx} />;
  } else {
    page = <Overview ctx={ctx} />;
  }
  useEffect(() => {
    document.title = `${title} · ${session.theme?.displayName ?? 'Herald console'}`;
  }, [title, session.theme?.displayName]);
  const current = parts[0] ? `/${parts[0]}` : '/';
  return (
    <>
      <a class="skip" href="#main" onClick={(e) => {
        e.preventDefault();
        document.getElementById('main')?.focus();
      }}>
        Skip to content
      </a>
      <header class="top">
        <div class="brand">
          {session.theme?.logoUrl ? <img src={session.theme.logoUrl} alt="" class="logo" /> : session.kind !== 'portal' && <img src="favicon.svg" alt="" class="logo" />}
          <span class="brand-name">{session.theme?.displayName ?? 'Herald'}</span>
        </div>
        {session.kind === 'operator' ? (
          <AccountPicker session={session} path={path} onPick={(id, name) => setSession({ ...session, account: id, ...(name ? { accountName: name } : {}) })} />
        ) : (
          <span class="account-name" data-testid="account-name">
            {session.accountName ?? session.account}
            {session.readOnly ? ' · read only' : ''}
          </span>
        )}
        <button type="button" class="signout" onClick={signOut}>
          {session.kind === 'portal' ? (session.returnUrl ? 'Leave' : 'Close') : 'Sign out'}
        </button>
      </header>
      <nav class="nav" aria-label="Console">
        <ul>
          {NAV.filter((n) => !n.operatorOnly || session.kind === 'operator').map((n) => (
            <li key={n.path}>
              <a href={href(n.path)} aria-current={current === n.path ? 'page' : undefined}>
                {n.label}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <main id="main" tabIndex={-1} key={`${account}${path}`}>
        {page}
      </main>
    </>
  );
}

function App() {
  const portalPage = onPortalPage();
  const [session, setSessionState] = useState<Session | undefined>(() => loadSession());
  const [portalToken] = useState(takePortalToken);
  // The same link opened again in this tab (the page framing the portal reloaded): its session goes on, no second exchange.
  const [reused] = useState(() => portalToken !== undefined && session?.kind === 'portal' && session.linkId !== undefined && session.linkId === linkIdOf(portalToken));
  const [refusal, setRefusal] = useState<Refusal | undefined>(() =>
    portalPage && !portalToken && !session ? { reason: 'no-link', message: 'No portal link was given to this page.' } : undefined,
  );
  const [exchanging, setExchanging] = useState(portalToken !== undefined && !reused);
  const [notice, setNotice] = useState<string>();

  const setSession = (s: Session | undefined) => {
    saveSession(s);
    setSessionState(s);
  };
  const signOut = (why?: string) => {
    const back = session?.kind === 'portal' ? session.returnUrl : undefined;
    setCredential(undefined);
    setSession(undefined);
    applyTheme(undefined);
    if (why) setNotice(why);
    // The portal's page has no sign-in form: leaving it shows a page that says so.
    if (portalPage) setRefusal({ reason: 'left', message: 'This portal session was closed in this tab.' });
    if (back && /^https?:\/\//.test(back)) location.assign(back);
  };

  useEffect(() => {
    if (!portalToken || reused) return;
    const refuse = (e: unknown) => {
      // Whatever was open in this tab before stays closed: a refused link shows no data.
      setCredential(undefined);
      setSession(undefined);
      const body = e instanceof ApiError ? e.body : {};
      const reason = e instanceof ApiError && e.status === 429 ? 'busy' : body.reason;
      setRefusal({
        message: messageOf(e),
        ...(typeof reason === 'string' ? { reason } : {}),
        ...(typeof body.returnUrl === 'string' ? { returnUrl: body.returnUrl } : {}),
      });
      setExchanging(false);
    };
    // A portal link: exchanged for a session once; the link's token is already out of the address bar.
    const exchange = (tries: number) =>
      call<PortalSession>('POST', '/portal/sessions', { token: portalToken }, { auth: false }).then(
        (p) => {
          if (p.scopes && !p.scopes.includes('read')) {
            refuse(new ApiError(403, 'The portal session cannot read this account.', [], { reason: 'no-read', ...(p.returnUrl ? { returnUrl: p.returnUrl } : {}) }));
            return;
          }
          setSession({
            token: p.sessionToken,
            kind: 'portal',
            account: p.account.id,
            accountName: p.account.name,
            readOnly: p.readOnly === true,
            ...(p.scopes ? { scopes: p.scopes } : {}),
            ...(linkIdOf(portalToken) ? { linkId: linkIdOf(portalToken) } : {}),
            ...(p.destinations ? { destinations: p.destinations } : {}),
            ...(p.expiresAt ? { expiresAt: p.expiresAt } : {}),
            ...(p.returnUrl ? { returnUrl: p.returnUrl } : {}),
            ...(p.theme ? { theme: p.theme } : {}),
          });
          setExchanging(false);
        },
        (e: unknown) => {
          // Opened too often just now (on this link, or on this instance): Herald says when to try again.
          if (e instanceof ApiError && e.status === 429 && tries < BUSY_TRIES) {
            const wait = Math.min(BUSY_WAIT_MAX_S, Math.max(1, Number(e.body.retryAfterSeconds) || 1));
            setTimeout(() => void exchange(tries + 1), wait * 1000);
            return;
          }
          refuse(e);
        },
      );
    void exchange(1);
  }, []);

  // A portal session Herald no longer accepts (expired, revoked, its account gone) ends on a page of its own, never the sign-in form.
  const endPortal = (e: ApiError, ended: Session) => {
    setCredential(undefined);
    setSession(undefined);
    setRefusal({ session: true, message: e.message, ...(typeof e.body.reason === 'string' ? { reason: e.body.reason } : {}), ...(ended.returnUrl ? { returnUrl: ended.returnUrl } : {}) });
  };
  if (session) setCredential(session.token, (e) => (session.kind === 'portal' ? endPortal(e, session) : signOut('Herald no longer accepts that credential: sign in again.')));
  useEffect(() => applyTheme(session?.theme), [session?.theme]);

  if (refusal) return <Refused refusal={refusal} />;
  if (exchanging) {
    return (
      <main id="main" class="signin">
        <p role="status">Opening the portal…</p>
      </main>
    );
  }
  if (!session) return <SignIn notice={notice} onSignedIn={(s) => {
    setNotice(undefined);
    setSession(s);
  }} />;
  return <Shell session={session} setSession={setSession} signOut={() => signOut()} />;
}

const root = document.getElementById('app');
if (root) {
  root.textContent = '';
  render(<App />, root);
}
