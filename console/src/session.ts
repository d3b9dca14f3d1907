import { Theme } from './types';

/**
 * Who the console acts as, for this tab only: sessionStorage (gone when the tab closes, never
 * shared with other tabs, never localStorage), and never in a URL.
 */
export interface Session {
  token: string;
  /** operator: the admin token; key: an account key (hk_…); portal: a portal session (hps_…). */
  kind: 'operator' | 'key' | 'portal';
  /** The account it is confined to (a key's, a portal's); the operator picks one. */
  account?: string;
  accountName?: string;
  readOnly?: boolean;
  /** A portal session's scopes (absent from Herald before scopes: read, and write unless read-only). */
  scopes?: string[];
  /** The portal link it was opened from: the same link opened again in this tab (a reload of the page framing it) reuses it. */
  linkId?: string;
  /** A portal link narrowed to some destinations. */
  destinations?: string[];
  expiresAt?: string;
  returnUrl?: string;
  theme?: Theme;
}

/**
 * Whether this is the customer portal's page (`…/console/portal`, where portal links lead):
 * the one page another site may frame (HERALD_PORTAL_FRAME_ANCESTORS). It offers no sign-in
 * and holds portal sessions only, under a key of its own: framed in a tab where the operator
 * was signed in, it never picks up their credential.
 */
export const onPortalPage = (pathname = location.pathname) => /\/console\/portal$/.test(pathname);

const keyOf = (portalPage: boolean) => (portalPage ? 'herald.portal.session' : 'herald.console.session');

export function loadSession(portalPage = onPortalPage()): Session | undefined {
  try {
    const raw = sessionStorage.getItem(keyOf(portalPage));
    const session = raw ? (JSON.parse(raw) as Session) : undefined;
    return portalPage && session?.kind !== 'portal' ? undefined : session;
  } catch {
    return undefined;
  }
}

export function saveSession(s: Session | undefined, portalPage = onPortalPage()): void {
  try {
    if (s) sessionStorage.setItem(keyOf(portalPage), JSON.stringify(s));
    else sessionStorage.removeItem(keyOf(portalPage));
  } catch {
    /* storage refused (a sandboxed iframe): the session lives in memory for this page */
  }
}

/** The id a portal link token names (`hpl_<base64url JSON claims>.<signature>`), read without checking it: only to recognise a link already opened here. */
export function linkIdOf(token: string): string | undefined {
  const body = /^hpl_([A-Za-z0-9_-]+)\./.exec(token)?.[1];
  if (!body) return undefined;
  try {
    const claims = JSON.parse(atob(body.replace(/-/g, '+').replace(/_/g, '/'))) as { id?: unknown };
    return typeof claims.id === 'string' ? claims.id : undefined;
  } catch {
    return undefined;
  }
}

export function kindOf(token: string): Session['kind'] {
  if (token.startsWith('hk_')) return 'key';
  if (token.startsWith('hps_')) return 'portal';
  return 'operator';
}

/** Applies a portal's theme: the brand colour as a CSS custom property (CSSOM, allowed by the CSP). */
export function applyTheme(theme: Theme | undefined): void {
  const root = document.documentElement;
  if (theme?.brandColor && /^#[0-9a-fA-F]{3,8}$|^[a-z]+$|^rgb/.test(theme.brandColor)) root.style.setProperty('--brand', theme.brandColor);
  else root.style.removeProperty('--brand');
}
