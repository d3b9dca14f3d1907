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
  /** A portal link narrowed to some destinations. */
  destinations?: string[];
  expiresAt?: string;
  returnUrl?: string;
  theme?: Theme;
}

const KEY = 'herald.console.session';

export function loadSession(): Session | undefined {
  try {
    const raw = sessionStorage.getItem(KEY);
    return raw ? (JSON.parse(raw) as Session) : undefined;
  } catch {
    return undefined;
  }
}

export function saveSession(s: Session | undefined): void {
  try {
    if (s) sessionStorage.setItem(KEY, JSON.stringify(s));
    else sessionStorage.removeItem(KEY);
  } catch {
    /* storage refused (a sandboxed iframe): the session lives in memory for this page */
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
