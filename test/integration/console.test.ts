/**
 * The web console in real Chromium (Debian's, through Playwright) against a whole local
 * Herald: an operator signs in, creates an account, a key and a destination, sees a delivery
 * in the log and its detail, rotates the secret; a customer portal link for one account shows
 * nothing of another's; an expired or tampered link is refused with a page, never data.
 * axe-core checks every page visited (no serious or critical violation), and the main pages
 * are saved to docs/screenshots/ at 1280 px.
 */
import { createHash } from 'node:crypto';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { accessibilityProblems, ensureConsoleBuilt, launchChromium, screenshot } from '../support/browser';
import { Receiver } from '../support/receiver';
import { startTestStack, testSecretsKey, TestStack } from '../support/stack';
import { portalKeyOf, portalSecretOf, signLink } from '../../shared/domain/portal';

const PROJECT = 'console-test';
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
  page.setDefaultTimeout(15_000);
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
async function until(page: Page, check: () => Promise<boolean>, refresh: () => Promise<void>, timeoutMs = 30_000): Promise<void> {
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
}, 120_000);

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
      await page.reload();
    },
  );
  await typeRow.getByRole('link', { name: 'orders' }).waitFor();
  await typeRow.locator('summary').focus();
  await page.keyboard.press('Enter');
  await typeRow.getByLabel('Latest com.example.order.created event').getByText('"order-1"').first().waitFor();
  await expectAccessible(page, 'event types');

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
  await receiver.waitFor(2, '/orders');
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
  await receiver.waitFor(3, '/orders');

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
  await progress.getByText(/finished/).waitFor({ timeout: 60_000 });
  expect(await progress.getByTestId('replay-redelivered').textContent()).toBe('1');
  await receiver.waitFor(2, '/flaky');
  await expectAccessible(page, 'replays');
  await screenshot(page, 'replays');

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
  await context.close();
});

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
  expect(link).toContain('/console/#portal=');

  const { context, page } = await newPage();
  await page.goto(link);
  await heading(page, 'Overview');
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
    const s = JSON.parse(sessionStorage.getItem('herald.console.session') || '{}');
    const res = await fetch('../accounts/portal-b/destinations', { headers: { authorization: 'Bearer ' + (s.token || '') } });
    return res.status;
  })()`);
  expect(other).toBe(404);
  expect(await page.evaluate('localStorage.length')).toBe(0);

  // A read-only link narrowed to one destination: that one, and no button that changes anything.
  expect((await stack.admin('PUT', '/accounts/portal-a/destinations/a-other', { url: `${receiver.url}/a-other`, eventTypes: ['com.example.*'] })).status).toBe(201);
  const readOnly = await stack.admin('POST', '/accounts/portal-a/portal-links', { ttlSeconds: 600, readOnly: true, destinations: ['a-hook'] });
  await page.goto((readOnly.body as { url: string }).url);
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
  await refused.context.close();
});
