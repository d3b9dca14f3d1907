/**
 * One account among many, as its people see it: every request the console's pages send for it
 * (operator token) and a customer portal session's (a link minted, exchanged as the console
 * does, then the same pages with the session's token), and one more destination created under
 * the account's quota. Each request measured on its own: milliseconds and Firestore documents
 * read. The Destinations page sends one request per row twice (the row's GET, its sparkline):
 * those are shown as the slowest and the most reads of any one row.
 */
import { AdminClient, Measured, Probe } from './scale-probe';

/** The targets for each request of an account's pages. */
export const PAGE_READS_MAX = 50;
export const PAGE_MS_MAX = 300;

export interface AccountView {
  account: string;
  /** The account's own destination ids. */
  destinations: readonly string[];
  /** A receiver URL of one of them (queued retrieval by URL). */
  queuedUrl: string;
}

/** The worst of a page's per-row requests, as one row. */
function worst(what: string, rows: Measured[]): Measured {
  const byCollection: Record<string, number> = {};
  for (const r of rows) for (const [c, n] of Object.entries(r.byCollection)) byCollection[c] = Math.max(byCollection[c] ?? 0, n);
  return {
    what: `${what} (×${rows.length}, worst one)`,
    ms: Math.max(0, ...rows.map((r) => r.ms)),
    reads: Math.max(0, ...rows.map((r) => r.reads)),
    counted: Math.max(0, ...rows.map((r) => r.counted)),
    byCollection,
  };
}

/** The console's pages of one account, through `client` (the operator's token or a portal session's). */
async function pages(client: AdminClient, probe: Probe, view: AccountView, who: string, visible: readonly string[]): Promise<Measured[]> {
  const base = `/accounts/${view.account}`;
  const out: Measured[] = [];
  const step = async (what: string, path: string) => (await probe.measure(`${who}: ${what}`, () => client.get(path))).m;
  out.push(await step('destinations page (list)', `${base}/destinations`));
  const rows: Measured[] = [];
  const sparklines: Measured[] = [];
  for (const id of visible) {
    rows.push(await step('destinations page: a row', `${base}/destinations/${id}`));
    sparklines.push(await step('destinations page: a sparkline', `${base}/stats?window=1h&counts=false&destination=${encodeURIComponent(id)}`));
  }
  out.push(worst(`${who}: destinations page: a row`, rows), worst(`${who}: destinations page: a sparkline`, sparklines));
  out.push(await step('overview (stats, 1 h)', `${base}/stats?window=1h`));
  out.push(await step('event types', `${base}/event-types`));
  out.push(await step('queued, by receiver URL', `${base}/deliveries?status=queued&url=${encodeURIComponent(view.queuedUrl)}&limit=50`));
  return out;
}

/**
 * Every measured request for the account: the operator's pages, a portal session's (the link's
 * exchange included), and creating one more destination (`extraId`, with `extraSpec`).
 */
export async function measureAccount(admin: AdminClient, probe: Probe, view: AccountView, extra: { id: string; spec: object } | undefined): Promise<Measured[]> {
  const base = `/accounts/${view.account}`;
  const out = await pages(admin, probe, view, 'console', view.destinations);
  const link = await admin.call<{ url: string }>('POST', `${base}/portal-links`, { ttlSeconds: 3600 }, [201]);
  const token = /#portal=([^&]+)/.exec(link.body.url)?.[1];
  if (!token) throw new Error(`a portal link without #portal=<token>: ${link.body.url}`);
  const exchanged = await probe.measure('portal: link exchanged for a session', () => admin.withToken('').call<{ sessionToken: string }>('POST', '/portal/sessions', { token: decodeURIComponent(token) }, [200]));
  out.push(exchanged.m);
  const session = admin.withToken(exchanged.value.body.sessionToken);
  out.push(...(await pages(session, probe, view, 'portal', view.destinations)));
  out.push((await probe.measure('portal: replays', () => session.get(`${base}/replays?limit=20`))).m);
  if (extra) out.push((await probe.measure('console: create one more destination (quota check)', () => admin.call('PUT', `${base}/destinations/${extra.id}`, extra.spec, [201]))).m);
  return out;
}

export const meetsPageTargets = (m: Measured): boolean => m.reads <= PAGE_READS_MAX && m.ms < PAGE_MS_MAX;
