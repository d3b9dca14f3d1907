/**
 * The web console in real Chromium (Debian's, through Playwright) against a whole local
 * Herald: an operator signs in, creates an account, a key and a destination, sees a delivery
 * in the log and its detail, rotates the secret; a customer portal link for one account shows
 * nothing of another's; an expired or tampered link is refused with a page, never data.
 * axe-core checks every page visited (no serious or critical violation), and the main pages
 * are screenshot at 1280 px: into docs/screenshots/ with HERALD_UPDATE_SCREENSHOTS=1, else a
 * temporary directory (test/support/browser.ts).
 */
import { createHash } from 'node:crypto';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { accessibilityProblems, ensureConsoleBuilt, launchChromium, screenshot, signInAsOperator } from '../support/browser';
import { Receiver } from '../support/receiver';
import { catalogueNow } from '../support/event-types';
import { patient } from '../support/patience';
import { startTestStack, testSecretsKey, TestStack } from '../support/stack';
import { portalKeyOf, portalSecretOf, signLink } from '../../shared/domain/access/portal';

import { eventually } from '../support/eventually';
// A project of its own each run: account ids are never reused, so a rerun on long-lived emulators starts clean.
const PROJECT = `console-test-${Date.now().toString(36)}`;
const WIDE = { width: 1280, height: 860 };

let stack: TestStack;
let receiver: Receiver;
let browser: Browser;
let consoleUrl: string;
/** Receiver paths answered with another status than 204. */
const answers = new Map<string, number>();
/** Every page error and console error seen (a CSP refusal shows as one): none is expected. */
const problems: string[] = [];

async function newPage(viewport = WIDE): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport, reducedMotion: 'reduce' });
  const page = await context.newPage();
  page.setDefaultTimeout(patient(15_000));
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' && !/status of (400|401|404|409)/.test(m.text())) problems.push(`console error: ${m.text()}`);
  });
  return { context, page };
}

/** axe on the page as it stands. */
async function expectAccessible(page: Page, what: string): Promise<void> {
  const found = await accessibilityProblems(page);
  expect({ page: what, violations: found }).toEqual({ page: what, violations: [] });
}

async function heading(page: Page, name: string | RegExp): Promise<void> {
  await page.getByRole('heading', { level: 1, name }).waitFor();
}

async function nav(page: Page, name: string): Promise<void> {
  await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name, exact: true }).click();
}

/** Clicks `button` until `check` holds (a list that fills as Herald works). */
async function until(page: Page, check: () => Promise<boolean>, refresh: () => Promise<void>, timeoutMs = patient(30_000)): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('timed out waiting for the console to show it');
    await page.waitForTimeout(400);
    await refresh();
  }
}

/** Publishes one event with an account key. */
async function publish(key: string, id: string, type = 'com.example.order.created'): Promise<void> {
  const res = await fetch(`${stack.url}/ingest`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/cloudevents+json' },
    body: JSON.stringify({ specversion: '1.0', id, source: 'shop', type, data: { id } }),
  });
  expect(res.status).toBe(202);
}

beforeAll(async () => {
  ensureConsoleBuilt();
  receiver = await new Receiver((req) => ({ status: answers.get(req.path) ?? 204 })).start();
  stack = await startTestStack(PROJECT);
  browser = await launchChromium();
  // The admin function serves the console; local mode mounts it at /admin.
  consoleUrl = `${stack.url}/admin/console/`;
  const res = await fetch(consoleUrl);
  if (res.status !== 200) throw new Error(`the console is not served at ${consoleUrl}: HTTP ${res.status} ${await res.text()}`);
  expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
}, patient(120_000));

afterAll(async () => {
  await browser?.close();
  await stack?.stop({ purge: true });
  await receiver?.stop();
});

afterEach(() => {
  const seen = problems.splice(0);
  expect(seen).toEqual([]);
});

test('an operator creates an account, a key and a destination, sees a delivery, rotates the secret, reactivates, replays; the key sends a test event', async () => {
  const { context, page } = await newPage();
  await page.goto(consoleUrl);
  await heading(page, 'Sign in to the Herald console');
  await expectAccessible(page, 'sign in');
  await screenshot(page, 'sign-in');

  // A wrong token is refused, said plainly.
  await page.getByLabel('Admin token or account key', { exact: true }).fill('not-the-token');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('alert').filter({ hasText: 'Herald refused this credential' }).waitFor();

  await page.getByLabel('Admin token or account key', { exact: true }).fill(stack.config.adminToken);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await heading(page, 'Overview');
  // Held for the tab only: never in localStorage, never in the URL.
  expect(await page.evaluate('localStorage.length')).toBe(0);
  expect(page.url()).not.toContain(stack.config.adminToken);

  // Accounts: create one, then a key for it (shown once).
  await nav(page, 'Accounts');
  await heading(page, 'Accounts');
  await page.getByLabel('Name', { exact: true }).fill('Acme Corp');
  await page.getByLabel('Id (optional)', { exact: true }).fill('acme');
  await page.getByRole('button', { name: 'Create account' }).click();
  await page.getByRole('status').getByRole('link', { name: 'Acme Corp' }).click();
  await heading(page, 'Acme Corp');
  await page.getByLabel('Queue —', { exact: false }).check();
  await page.getByRole('status').filter({ hasText: 'Failure policy is now queue' }).waitFor();
  expect((await stack.admin('GET', '/accounts/acme/settings')).body).toEqual({ 'notification.webhook.failure.policy': 'queue' });
  await page.getByLabel('Retry —', { exact: false }).check();
  await page.getByRole('status').filter({ hasText: 'Failure policy is now retry' }).waitFor();
  await page.getByLabel('Key name', { exact: true }).fill('publisher');
  await page.getByRole('button', { name: 'Create key' }).click();
  const key = await page.getByTestId('secret-value').inputValue();
  expect(key).toMatch(/^hk_/);
  await page.getByRole('cell', { name: 'publisher' }).waitFor();
  await expectAccessible(page, 'account');
  await screenshot(page, 'account');

  // Into the account; its destinations are empty, and say what to do.
  await page.getByLabel('Account', { exact: true }).selectOption('acme');
  await nav(page, 'Destinations');
  await heading(page, 'Destinations');
  await page.getByText('No destinations yet.').waitFor();
  await expectAccessible(page, 'destinations (empty)');

  // The API's validation messages, by field.
  await page.getByRole('link', { name: 'New destination' }).first().click();
  await heading(page, 'New destination');
  await page.getByLabel('Id', { exact: true }).fill('orders');
  await page.getByLabel('Webhook URL', { exact: true }).fill('ftp://example.com/hook');
  await page.getByLabel('Event types', { exact: true }).fill('com.example.*');
  await page.getByRole('button', { name: 'Create destination' }).click();
  await page.getByRole('alert').filter({ hasText: 'The destination was not created' }).waitFor();
  await page.locator('#url-error').waitFor();
  expect(await page.getByLabel('Webhook URL', { exact: true }).getAttribute('aria-invalid')).toBe('true');
  await expectAccessible(page, 'destination form with errors');
  await screenshot(page, 'destination-form');

  await page.getByLabel('Webhook URL', { exact: true }).fill(`${receiver.url}/orders`);
  await page.getByRole('button', { name: 'Create destination' }).click();
  await heading(page, 'Destination orders created');
  const firstSecret = await page.getByTestId('secret-value').inputValue();
  expect(firstSecret).toMatch(/^whsec_/);
  await page.getByRole('link', { name: 'Open orders' }).click();
  await heading(page, 'orders');

  // Published with the account's key; the console shows the delivery and its detail.
  await publish(key, 'order-1');
  await receiver.waitFor(1, '/orders');
  await nav(page, 'Delivery log');
  await heading(page, 'Delivery log');
  const row = page.getByRole('row').filter({ hasText: 'order-1' });
  await until(
    page,
    async () => (await row.filter({ hasText: 'delivered' }).count()) > 0,
    () => page.getByRole('button', { name: 'Refresh' }).click(),
  );
  await row.getByRole('button', { name: 'order-1' }).click();
  const detail = page.getByTestId('delivery-detail');
  await detail.getByText('com.example.order.created').first().waitFor();
  await detail.getByText(/^delivered /).waitFor();
  // The attempt as sent and answered: the signature masked, the body, the receiver's status.
  const attempt = detail.getByTestId('attempt').first();
  expect(await attempt.locator('summary').textContent()).toMatch(/HTTP 204 in \d+ ms → delivered/);
  const sentHeaders = (await attempt.getByLabel('Request headers').textContent()) ?? '';
  expect(sentHeaders).toMatch(/webhook-signature: v1,••••••/);
  expect(sentHeaders).toContain('ce-id: order-1');
  expect(sentHeaders).not.toContain(firstSecret);
  expect(await attempt.getByLabel('Request body').textContent()).toBe('{"id":"order-1"}');
  await attempt.getByText('HTTP 204', { exact: false }).first().waitFor();
  await expectAccessible(page, 'delivery log with detail');
  await screenshot(page, 'delivery-log');

  // Event types: the type published, the destination taking it, its latest event opened from the keyboard.
  await nav(page, 'Event types');
  await heading(page, 'Event types');
  const typeRow = page.getByTestId('event-type').filter({ hasText: 'com.example.order.created' });
  await until(
    page,
    async () => (await typeRow.count()) > 0,
    async () => {
      await catalogueNow(stack);
      await page.reload();
    },
  );
  await typeRow.getByRole('link', { name: 'orders' }).waitFor();
  await typeRow.locator('summary').focus();
  await page.keyboard.press('Enter');
  await typeRow.getByLabel('Latest com.example.order.created event').getByText('"order-1"').first().waitFor();
  await expectAccessible(page, 'event types');

  // Filters: by event id (one row), by a type nothing was published as (an empty state that says so).
  await publish(key, 'order-9');
  await receiver.waitFor(2, '/orders');
  await nav(page, 'Delivery log');
  await heading(page, 'Delivery log');
  await page.getByLabel('Event id').fill('order-9');
  await page.getByRole('button', { name: 'Apply' }).click();
  const filtered = page.getByRole('row').filter({ hasText: 'order-9' });
  await until(
    page,
    async () => (await filtered.count()) > 0,
    () => page.getByRole('button', { name: 'Refresh' }).click(),
  );
  expect(await page.getByRole('row').filter({ hasText: 'order-1' }).count()).toBe(0);
  await page.getByLabel('Event id').fill('');
  await page.getByLabel('Event type').fill('com.example.nothing');
  await page.getByRole('button', { name: 'Apply' }).click();
  await page.getByText('match these filters').waitFor();
  await page.getByRole('link', { name: 'Clear filters' }).click();
  await page.getByRole('row').filter({ hasText: 'order-1' }).waitFor();

  // Rotate the secret: a new one, shown once; the old one signing for the grace period.
  await page.goto(`${consoleUrl}#/destinations/orders`);
  await heading(page, 'orders');
  await page.getByRole('button', { name: 'Rotate secret' }).click();
  const secret = await page.getByTestId('secret-value').inputValue();
  expect(secret).toMatch(/^whsec_/);
  expect(secret).not.toBe(firstSecret);
  await page.getByTestId('previous-secrets').waitFor();
  await expectAccessible(page, 'destination');
  await screenshot(page, 'destination');

  // Overview: the account's numbers, from the stats counters.
  await nav(page, 'Overview');
  await heading(page, 'Overview');
  await until(
    page,
    async () => Number(await page.getByTestId('stat-attempts').textContent().catch(() => '0')) >= 1,
    async () => {
      await page.getByRole('button', { name: 'Last day' }).click();
      await page.getByRole('button', { name: 'Last hour' }).click();
    },
  );
  await page.locator('.chart canvas').first().waitFor();
  await expectAccessible(page, 'overview');
  await screenshot(page, 'overview');

  // A receiver that answers 410 Gone: Herald suspends the destination; reactivated, its queued event goes.
  answers.set('/orders', 410);
  await publish(key, 'order-2');
  await receiver.waitFor(3, '/orders');
  await page.goto(`${consoleUrl}#/destinations/orders`);
  await until(
    page,
    async () => (await page.getByRole('region', { name: 'Suspension' }).count()) > 0,
    async () => {
      await page.reload();
    },
  );
  await expectAccessible(page, 'suspended destination');
  await screenshot(page, 'destination-suspended');
  answers.delete('/orders');
  await page.getByRole('button', { name: 'Reactivate' }).click();
  await page.getByRole('status').filter({ hasText: 'Reactivated: 1 queued' }).waitFor();
  await receiver.waitFor(4, '/orders');

  // A destination that gives up at once: its dead delivery shows, and a replay sends it again, watched to its end.
  const once = { retryOn: { statuses: ['5xx'], timeouts: true, networkErrors: true }, backoff: { kind: 'exponential', initialMs: 1000, factor: 2, capMs: 10000 }, maxAttempts: 1 };
  expect((await stack.admin('PUT', '/accounts/acme/destinations/flaky', { url: `${receiver.url}/flaky`, eventTypes: ['com.example.flaky'], policy: once })).status).toBe(201);
  answers.set('/flaky', 500);
  await publish(key, 'flaky-1', 'com.example.flaky');
  await nav(page, 'Queued & dead');
  await heading(page, 'Queued & dead');
  await page.getByText('No queued deliveries.').waitFor();
  await expectAccessible(page, 'queued');
  await page.getByRole('link', { name: 'Dead', exact: true }).click();
  await until(
    page,
    async () => (await page.getByRole('row').filter({ hasText: 'flaky-1' }).count()) > 0,
    async () => {
      await page.reload();
    },
  );
  await expectAccessible(page, 'dead');
  await screenshot(page, 'dead');
  answers.delete('/flaky');
  await nav(page, 'Replays');
  await heading(page, 'Replays');
  await page.getByText('No replays yet.').waitFor();
  await page.getByLabel('Destination (optional)', { exact: true }).fill('flaky');
  await page.getByRole('button', { name: 'Start replay' }).click();
  const progress = page.getByTestId('replay-progress');
  await progress.getByText(/finished/).waitFor({ timeout: patient(60_000) });
  expect(await progress.getByTestId('replay-redelivered').textContent()).toBe('1');
  await receiver.waitFor(2, '/flaky');
  await expectAccessible(page, 'replays');
  await screenshot(page, 'replays');

  // The overview charts what became queued (the 410) and dead (flaky), from the counters.
  await nav(page, 'Overview');
  await until(
    page,
    async () => (await page.getByText('Deliveries that became queued or dead, per interval').count()) > 0,
    async () => {
      await page.getByRole('button', { name: 'Last day' }).click();
      await page.getByRole('button', { name: 'Last hour' }).click();
    },
  );
  await expectAccessible(page, 'overview with queued and dead');

  // 375 px: everything fits the width (tables scroll inside their own region).
  await page.setViewportSize({ width: 375, height: 800 });
  for (const [route, title] of [
    ['#/destinations', 'Destinations'],
    ['#/log', 'Delivery log'],
    ['#/', 'Overview'],
  ] as const) {
    await page.goto(`${consoleUrl}${route}`);
    await heading(page, title);
    expect(Number(await page.evaluate('document.documentElement.scrollWidth'))).toBeLessThanOrEqual(375);
  }
  await expectAccessible(page, 'overview at 375 px');

  await page.getByRole('button', { name: 'Sign out' }).click();
  await heading(page, 'Sign in to the Herald console');
  expect(await page.evaluate('sessionStorage.length')).toBe(0);

  // The account's own key: its account alone (no Accounts page), and a test event from the destination's page.
  await page.setViewportSize(WIDE);
  await page.getByLabel('Admin token or account key', { exact: true }).fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await heading(page, 'Overview');
  expect(await page.getByTestId('account-name').textContent()).toContain('Acme Corp');
  expect(await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Accounts' }).count()).toBe(0);
  await page.goto(`${consoleUrl}#/destinations/orders`);
  await page.getByRole('button', { name: 'Send test event' }).click();
  await page.getByRole('status').filter({ hasText: 'accepted' }).waitFor();
  const test = page.getByRole('row').filter({ hasText: 'console-test-' });
  await until(
    page,
    async () => (await test.filter({ hasText: 'delivered' }).count()) > 0,
    () => page.getByRole('button', { name: 'Refresh' }).click(),
  );
  // Its attempt, opened from the row: what the receiver answered.
  await test.getByRole('button').first().click();
  expect(await page.getByTestId('delivery-detail').getByTestId('attempt').first().locator('summary').textContent()).toMatch(/HTTP 204 in \d+ ms → delivered/);
  await context.close();
  // Some forty steps, each waiting for what it shows with a bound of its own: ~40 s quiet, over 90 s beside a chaos run.
}, patient(300_000));

test("a portal link for one account never shows another's data; an expired or tampered link is refused", async () => {
  for (const [id, name, dest] of [
    ['portal-a', 'Portal A', 'a-hook'],
    ['portal-b', 'Portal B', 'b-private-hook'],
  ] as const) {
    expect((await stack.admin('POST', '/accounts', { id, name })).status).toBe(201);
    expect((await stack.admin('PUT', `/accounts/${id}/destinations/${dest}`, { url: `${receiver.url}/${dest}`, eventTypes: ['com.example.*'] })).status).toBe(201);
  }
  const themed = await stack.admin('PATCH', '/accounts/portal-a', { portal: { brandColor: '#0a5c36', displayName: 'Portal A Inc' } });
  expect(themed.status).toBe(200);
  const minted = await stack.admin('POST', '/accounts/portal-a/portal-links', { ttlSeconds: 600, returnUrl: 'https://app.example.com/settings/webhooks' });
  expect(minted.status).toBe(201);
  const link = (minted.body as { url: string }).url;
  expect(link).toContain('/console/portal#portal=');

  const { context, page } = await newPage();
  await page.goto(link);
  await heading(page, 'Overview');
  // Herald's own health is the operator's: a portal session sees none of it.
  expect(await page.getByTestId('herald-health').count()).toBe(0);
  // The link's token leaves the address bar at once.
  expect(page.url()).not.toContain('portal=');
  await page.getByText('Portal A Inc').first().waitFor();
  expect(await page.getByTestId('account-name').textContent()).toContain('Portal A');
  // The account's brand colour, set through the CSSOM (the CSP allows no inline style).
  expect(await page.evaluate("getComputedStyle(document.querySelector('header.top')).backgroundColor")).toBe('rgb(10, 92, 54)');
  expect(await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Accounts' }).count()).toBe(0);
  await expectAccessible(page, 'portal overview');

  const seen: string[] = [];
  for (const [route, title] of [
    ['#/destinations', 'Destinations'],
    ['#/log', 'Delivery log'],
    ['#/queued', 'Queued & dead'],
    ['#/replays', 'Replays'],
    ['#/usage', 'Usage'],
    ['#/accounts', 'Overview'],
  ] as const) {
    await page.goto(`${link.split('#')[0]}${route}`);
    await heading(page, title);
    await page.waitForLoadState('networkidle');
    seen.push(await page.locator('body').innerText());
    if (route === '#/destinations') {
      await page.getByRole('link', { name: 'a-hook' }).waitFor();
      await expectAccessible(page, 'portal destinations');
      await screenshot(page, 'portal');
    }
  }
  for (const text of seen) {
    expect(text).not.toContain('portal-b');
    expect(text).not.toContain('b-private-hook');
    expect(text).not.toContain('Portal B');
  }
  // Asking for another account with the portal's own session gets nothing either.
  const other = await page.evaluate(`(async () => {
    const s = JSON.parse(sessionStorage.getItem('herald.portal.session') || '{}');
    const res = await fetch('../accounts/portal-b/destinations', { headers: { authorization: 'Bearer ' + (s.token || '') } });
    return res.status;
  })()`);
  expect(other).toBe(404);
  expect(await page.evaluate('localStorage.length')).toBe(0);
  // The same link loaded again in this tab (the page framing the portal reloaded): the session goes on, no second exchange.
  await page.goto('about:blank');
  await page.goto(link);
  await heading(page, 'Overview');
  const opened = (await stack.admin('GET', '/accounts/portal-a/portal-links')).body as { links: { id: string; sessionsOpened: number }[] };
  expect(opened.links.find((l) => l.id === (minted.body as { id: string }).id)?.sessionsOpened).toBe(1);

  // A read-only link narrowed to one destination: that one, and no button that changes anything.
  expect((await stack.admin('PUT', '/accounts/portal-a/destinations/a-other', { url: `${receiver.url}/a-other`, eventTypes: ['com.example.*'] })).status).toBe(201);
  const readOnly = await stack.admin('POST', '/accounts/portal-a/portal-links', { ttlSeconds: 600, readOnly: true, destinations: ['a-hook'] });
  await page.goto((readOnly.body as { url: string }).url);
  // The page already shows an Overview from the last session: wait for this link's own session (its mark and a URL without the link) before moving on.
  await page.getByTestId('account-name').filter({ hasText: 'read only' }).waitFor();
  await page.waitForURL((url) => !url.hash.includes('portal='));
  await heading(page, 'Overview');
  await page.goto(`${link.split('#')[0]}#/destinations`);
  await page.getByRole('link', { name: 'a-hook' }).waitFor();
  expect(await page.getByTestId('account-name').textContent()).toContain('read only');
  expect(await page.getByRole('link', { name: 'New destination' }).count()).toBe(0);
  expect(await page.getByText('a-other').count()).toBe(0);
  await page.getByRole('link', { name: 'a-hook' }).click();
  await page.getByRole('heading', { level: 2, name: 'Recent deliveries' }).waitFor();
  expect(await page.getByRole('button', { name: /Rotate|Delete|Redeliver|Edit/ }).count()).toBe(0);
  await context.close();

  // An authentic link past its time: refused with the way back, and nothing else.
  const key = portalKeyOf(portalSecretOf(testSecretsKey(PROJECT), createHash('sha256').update(stack.config.adminToken).digest()));
  const expired = signLink(key, { id: 'expired-link-0000000', account: 'portal-a', readOnly: false, returnUrl: 'https://app.example.com/settings/webhooks', exp: Math.floor(Date.now() / 1000) - 60 });
  const refused = await newPage();
  await refused.page.goto(`${link.split('#')[0]}#portal=${expired}`);
  await heading(refused.page, 'This link has expired');
  expect(await refused.page.getByTestId('return-link').getAttribute('href')).toBe('https://app.example.com/settings/webhooks');
  expect(await refused.page.getByRole('navigation').count()).toBe(0);
  expect(await refused.page.locator('body').innerText()).not.toContain('a-hook');
  await expectAccessible(refused.page, 'expired link');
  await screenshot(refused.page, 'portal-expired');

  // A changed link: not valid, and no return URL (nothing of it can be trusted).
  const token = link.split('#portal=')[1]!;
  const tampered = `${token.slice(0, -3)}${token.endsWith('AAA') ? 'BBB' : 'AAA'}`;
  await refused.page.goto('about:blank');
  await refused.page.goto(`${link.split('#')[0]}#portal=${tampered}`);
  await heading(refused.page, 'This link is not valid');
  expect(await refused.page.getByTestId('return-link').count()).toBe(0);

  // The portal's page without a link: it says where to go, and offers no sign-in (it is the page other sites may frame).
  await refused.page.goto('about:blank');
  await refused.page.goto(link.split('#')[0]!);
  await heading(refused.page, 'Open the portal from your link');
  expect(await refused.page.getByRole('button', { name: 'Sign in' }).count()).toBe(0);
  await refused.context.close();
});

test('the operator ends a portal session from the Accounts page; the portal says it ended, and shows nothing more', async () => {
  expect((await stack.admin('POST', '/accounts', { id: 'portal-c', name: 'Portal C' })).status).toBe(201);
  expect((await stack.admin('PUT', '/accounts/portal-c/destinations/c-hook', { url: `${receiver.url}/c-hook`, eventTypes: ['com.example.*'] })).status).toBe(201);
  const minted = await stack.admin('POST', '/accounts/portal-c/portal-links', { ttlSeconds: 600, returnUrl: 'https://app.example.com/settings/webhooks' });
  const link = (minted.body as { id: string; url: string }).url;
  const customer = await newPage();
  await customer.page.goto(link);
  await heading(customer.page, 'Overview');

  const { context, page } = await newPage();
  await page.goto(consoleUrl);
  await page.getByLabel('Admin token or account key', { exact: true }).fill(stack.config.adminToken);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await heading(page, 'Overview');
  await page.goto(`${consoleUrl}#/accounts/portal-c`);
  await heading(page, 'Portal C');
  const access = page.getByTestId('portal-access');
  await access.getByRole('region', { name: 'Portal sessions' }).waitFor();
  expect(await access.getByRole('region', { name: 'Portal links' }).innerText()).toContain((minted.body as { id: string }).id);
  await expectAccessible(page, 'account portal access');
  await access.getByRole('button', { name: 'End all sessions' }).click();
  await access.getByRole('button', { name: 'Yes, end all sessions' }).click();
  await access.getByRole('status').filter({ hasText: 'Ended 1 session and 1 link.' }).waitFor();
  await access.getByText('No live portal sessions.').waitFor();
  await context.close();

  // The customer's next request is refused: a page that says so, with the way back, and no data.
  await customer.page.goto(`${link.split('#')[0]}#/destinations`);
  await heading(customer.page, 'This session has ended');
  expect(await customer.page.getByTestId('return-link').getAttribute('href')).toBe('https://app.example.com/settings/webhooks');
  expect(await customer.page.getByRole('navigation').count()).toBe(0);
  expect(await customer.page.locator('body').innerText()).not.toContain('c-hook');
  expect(await customer.page.evaluate("sessionStorage.getItem('herald.portal.session')")).toBeNull();
  await expectAccessible(customer.page, 'ended portal session');
  await customer.context.close();
});

describe('attempt latency and success-rate sparklines', () => {
  it("shows the overview's latency in ms after a delivery, and a destination row's success-rate sparkline named with its percentage", async () => {
    expect((await stack.admin('POST', '/accounts', { id: 'latency', name: 'Latency Ltd' })).status).toBe(201);
    expect((await stack.admin('PUT', '/accounts/latency/destinations/timed', { url: `${receiver.url}/timed`, eventTypes: ['com.example.timed'] })).status).toBe(201);
    const sent = await stack.ingest({ 'content-type': 'application/json', 'ce-id': 'timed-1', 'ce-source': 'shop', 'ce-type': 'com.example.timed', 'ce-specversion': '1.0', 'ce-heraldaccount': 'latency' }, '{}');
    expect(sent.status).toBe(202);
    await receiver.waitFor(1, '/timed');

    const { context, page } = await newPage();
    await page.goto(consoleUrl);
    await page.getByLabel('Admin token or account key', { exact: true }).fill(stack.config.adminToken);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await heading(page, 'Overview');
    await page.getByLabel('Account', { exact: true }).selectOption('latency');
    const tile = page.getByTestId('stat-latency');
    await until(
      page,
      async () => /^\d+ ms \/ \d+ ms$/.test(((await tile.textContent().catch(() => '')) ?? '').trim()),
      async () => {
        await page.getByRole('button', { name: 'Last day' }).click();
        await page.getByRole('button', { name: 'Last hour' }).click();
      },
    );
    await page.getByRole('img', { name: /^Attempt latency, p50 and p99 \(ms\)/ }).waitFor();
    await expectAccessible(page, 'overview with latency');

    await nav(page, 'Destinations');
    await heading(page, 'Destinations');
    const spark = page.getByRole('row').filter({ hasText: 'timed' }).getByTestId('success-sparkline');
    // The list, then each row's hour, load after the page: let them land before looking again.
    await until(
      page,
      async () => (await spark.count()) > 0,
      async () => {
        await page.reload();
        await page.waitForLoadState('networkidle');
      },
    );
    expect(await spark.getAttribute('role')).toBe('img');
    expect(await spark.getAttribute('aria-label')).toMatch(/success rate over the last hour: \d+(\.\d)? %$/);
    await spark.locator('canvas').waitFor();
    await expectAccessible(page, 'destinations with sparklines');
    await page.setViewportSize({ width: 375, height: 800 });
    expect(Number(await page.evaluate('document.documentElement.scrollWidth'))).toBeLessThanOrEqual(375);
    await context.close();
  });
});

/** Signs a new page in with the admin token, looking at `account`. */
async function signedInAs(account: string): Promise<{ context: BrowserContext; page: Page }> {
  const opened = await newPage();
  await signInAsOperator(opened.page, consoleUrl, stack.config.adminToken, account);
  return opened;
}

test('an operator suspends a destination by hand from its page (reason, confirmed), sees it suspended, then reactivates it', async () => {
  expect((await stack.admin('POST', '/accounts', { id: 'holdco', name: 'holdco' })).status).toBe(201);
  expect((await stack.admin('PUT', '/accounts/holdco/destinations/shop', { url: `${receiver.url}/shop`, eventTypes: ['com.example.*'] })).status).toBe(201);
  const { context, page } = await signedInAs('holdco');
  await page.goto(`${consoleUrl}#/destinations/shop`);
  await heading(page, 'shop');
  expect(await page.getByRole('region', { name: 'Suspension' }).count()).toBe(0);
  await page.getByLabel('Reason (optional)', { exact: true }).fill('receiver maintenance');
  await page.getByRole('button', { name: 'Suspend', exact: true }).click();
  // One more step before anything changes; Cancel backs out.
  await page.getByRole('button', { name: 'Cancel' }).click();
  expect(((await stack.admin('GET', '/accounts/holdco/destinations/shop')).body as { status: string }).status).toBe('active');
  await page.getByRole('button', { name: 'Suspend', exact: true }).click();
  await expectAccessible(page, 'suspend, confirming');
  await page.getByRole('button', { name: 'Yes, suspend' }).click();
  await page.getByRole('status').filter({ hasText: 'Suspended: receiver maintenance' }).waitFor();
  const suspension = page.getByRole('region', { name: 'Suspension' });
  await suspension.getByText('receiver maintenance').waitFor();
  await suspension.getByText('Suspended by hand by admin.').waitFor();
  expect(await page.locator('dl.props').getByText('suspended', { exact: true }).count()).toBe(1);
  expect((await stack.admin('GET', '/accounts/holdco/destinations/shop')).body).toMatchObject({ status: 'suspended', suspension: { cause: 'manual', reason: 'receiver maintenance', by: 'admin' } });
  // Suspended, it offers Reactivate, not Suspend.
  expect(await page.getByRole('button', { name: 'Suspend', exact: true }).count()).toBe(0);
  await expectAccessible(page, 'destination suspended by hand');
  await page.getByRole('button', { name: 'Reactivate' }).click();
  await page.getByRole('status').filter({ hasText: 'Reactivated: 0 queued' }).waitFor();
  await page.getByRole('button', { name: 'Suspend', exact: true }).waitFor();
  expect(await page.getByRole('region', { name: 'Suspension' }).count()).toBe(0);
  expect(((await stack.admin('GET', '/accounts/holdco/destinations/shop')).body as { status: string }).status).toBe('active');
  await context.close();
});

test('on Queued & dead, one of two dead deliveries selected (from the keyboard) and redelivered: only that one leaves', async () => {
  expect((await stack.admin('POST', '/accounts', { id: 'pickco', name: 'pickco' })).status).toBe(201);
  const made = await stack.admin('POST', '/accounts/pickco/keys', { name: 'publisher' });
  expect(made.status).toBe(201);
  const key = (made.body as { key: string }).key;
  const once = { retryOn: { statuses: ['5xx'], timeouts: true, networkErrors: true }, backoff: { kind: 'exponential', initialMs: 1000, factor: 2, capMs: 10000 }, maxAttempts: 1 };
  expect((await stack.admin('PUT', '/accounts/pickco/destinations/picky', { url: `${receiver.url}/picky`, eventTypes: ['com.example.pick'], policy: once })).status).toBe(201);
  answers.set('/picky', 500);
  await publish(key, 'pick-1', 'com.example.pick');
  await publish(key, 'pick-2', 'com.example.pick');
  await receiver.waitFor(2, '/picky');

  const { context, page } = await signedInAs('pickco');
  await page.goto(`${consoleUrl}#/queued?status=dead`);
  await heading(page, 'Queued & dead');
  const rowOf = (id: string) => page.getByRole('row').filter({ hasText: id });
  await until(
    page,
    async () => (await rowOf('pick-1').count()) > 0 && (await rowOf('pick-2').count()) > 0,
    async () => {
      await page.reload();
    },
  );
  answers.delete('/picky');
  const selected = page.getByRole('button', { name: /^Redeliver selected/ });
  expect(await selected.textContent()).toBe('Redeliver selected (0)');
  expect(await selected.isDisabled()).toBe(true);
  const box = page.getByLabel('Select pick-1 to picky', { exact: true });
  await box.focus();
  await page.keyboard.press('Space');
  expect(await box.isChecked()).toBe(true);
  expect(await page.getByLabel('Select pick-2 to picky', { exact: true }).isChecked()).toBe(false);
  await page.getByRole('button', { name: 'Redeliver selected (1)' }).waitFor();
  await expectAccessible(page, 'dead, one selected');
  await selected.focus();
  await page.keyboard.press('Enter');
  await page.getByRole('status').filter({ hasText: '1 of 1 selected delivery is being sent again.' }).waitFor();
  await receiver.waitFor(3, '/picky');
  await until(
    page,
    async () => (await rowOf('pick-1').count()) === 0 && (await rowOf('pick-2').count()) === 1,
    async () => {
      await page.reload();
    },
  );
  const dead = (await stack.admin('GET', '/accounts/pickco/deliveries?status=dead')).body as { deliveries: { eventId: string }[] };
  expect(dead.deliveries.map((d) => d.eventId)).toEqual(['pick-2']);
  expect(receiver.on('/picky').filter((r) => r.headers['ce-id'] === 'pick-2')).toHaveLength(1);

  // A replay chosen by destination (offered from the account's), from and to, and event types; the API's message under its field.
  await nav(page, 'Replays');
  await heading(page, 'Replays');
  await page.locator('#replay-destinations option[value="picky"]').waitFor({ state: 'attached' });
  await page.getByLabel('Destination (optional)', { exact: true }).fill('picky');
  await page.getByLabel('From (optional)', { exact: true }).fill('2026-11-25T12:00:00');
  await page.getByLabel('To (optional)', { exact: true }).fill('2026-11-25T11:00:00');
  await page.getByLabel('Event types (optional)', { exact: true }).fill('com.example.pick');
  await page.getByRole('button', { name: 'Start replay' }).click();
  await page.locator('#replay-until-error').filter({ hasText: 'until must not be before since' }).waitFor();
  await expectAccessible(page, 'replay form with a bad range');
  await page.getByLabel('To (optional)', { exact: true }).fill('2099-01-01T00:00:00');
  await page.getByLabel('Dry run', { exact: false }).check();
  await page.getByRole('button', { name: 'Start replay' }).click();
  await page.getByTestId('replay-progress').getByText(/finished/).waitFor({ timeout: patient(60_000) });
  const replays = (await stack.admin('GET', '/accounts/pickco/replays')).body as { replays: { request: Record<string, unknown> }[] };
  expect(replays.replays[0]!.request).toMatchObject({ account: 'pickco', destination: 'picky', since: expect.any(String) as unknown, until: expect.any(String) as unknown, eventTypes: ['com.example.pick'], dryRun: true });
  await context.close();
});

test("the operator's Overview opens on Herald's health: five tiles with units, over a window, refreshed", async () => {
  const { context, page } = await newPage();
  await page.goto(consoleUrl);
  await page.getByLabel('Admin token or account key', { exact: true }).fill(stack.config.adminToken);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await heading(page, 'Overview');
  const health = page.getByRole('region', { name: 'Herald health' });
  await health.getByRole('heading', { level: 2, name: 'Herald health' }).waitFor();
  // Earlier tests published and delivered: the numbers are there, with their units.
  await page.getByTestId('health-accepted').filter({ hasText: /^[\d.,]+ events\/s$/ }).waitFor();
  expect(await page.getByTestId('health-delivered').textContent()).toMatch(/^([\d.,]+ \/s|—)$/);
  expect(await page.getByTestId('health-p99').textContent()).toMatch(/^([\d.,]+ (ms|s)|—)$/);
  expect(await page.getByTestId('health-dead').textContent()).toMatch(/^\d+$/);
  expect(await page.getByTestId('health-lanes').textContent()).toMatch(/^([\d.,]+ s|—)$/);
  await health.getByText(/from this process's own metrics/).waitFor();
  // The counts behind the rates agree with what GET /admin/overview says for the window.
  await health.getByRole('button', { name: '1 h' }).click();
  const api = (await stack.admin('GET', '/overview?window=1h')).body as { counts: { accepted: number } };
  expect(api.counts.accepted).toBeGreaterThan(0);
  await page.getByTestId('health-counts').filter({ hasText: /\d+ events accepted/ }).waitFor();
  // Read again every few seconds: the time of the last read moves on.
  const read = async () => (await health.getByText(/last at/).textContent()) ?? '';
  const first = await read();
  await until(page, async () => (await read()) !== first, () => page.waitForTimeout(500), patient(15_000));
  await expectAccessible(page, 'overview with Herald health');
  await screenshot(page, 'overview-health');
  await context.close();
});

test("the Usage page: the operator sees every account's month, sorted by a column it picks; the numbers are the API's", async () => {
  const { context, page } = await newPage();
  await page.goto(consoleUrl);
  await page.getByLabel('Admin token or account key', { exact: true }).fill(stack.config.adminToken);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await nav(page, 'Usage');
  await heading(page, 'Usage');
  // Earlier tests published to acme: its row shows what GET /admin/usage says for the month.
  const month = new Date().toISOString().slice(0, 7);
  // Counted once the reconciler removed their journal batches (a minute after acceptance in a test stack).
  const acme = await eventually(
    "acme's accepted events in usage",
    async () => {
      const api = (await stack.admin('GET', `/usage?from=${month}-01`)).body as { accounts: { account: string; eventsAccepted: number }[] };
      const found = api.accounts.find((a) => a.account === 'acme');
      return found && found.eventsAccepted > 0 ? found : undefined;
    },
    patient(120_000),
  );
  await page.reload();
  const row = page.getByTestId('usage-account').filter({ has: page.getByRole('rowheader', { name: 'acme', exact: true }) });
  await row.waitFor();
  expect(await row.locator('td').first().textContent()).toBe(String(acme.eventsAccepted));
  // Sorted by account name, then the other way.
  await page.getByRole('button', { name: 'Account', exact: true }).click();
  const names = async () => page.getByTestId('usage-account').getByRole('rowheader').allTextContents();
  const sorted = [...(await names())].sort((a, b) => a.localeCompare(b));
  expect(await names()).toEqual(sorted);
  await page.getByRole('button', { name: 'Account', exact: true }).click();
  expect(await names()).toEqual([...sorted].reverse());
  await expectAccessible(page, 'usage');
  await context.close();
});
