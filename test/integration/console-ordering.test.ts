/**
 * A destination's `ordering` (issue 38) in the web console, real Chromium against a whole local
 * Herald: the operator turns ordering per key on in the destination form, sees it saved and
 * shown, changes it and turns it off; a key held by a DEAD event is listed on the destination's
 * page with a link to that event's delivery (whose detail shows its place), and skipped from
 * there, after which the key's next event goes out. What ordering does to the requests is
 * test/integration/ordered-delivery.test.ts's to show; this is the operator's side of it.
 */
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { accessibilityProblems, ensureConsoleBuilt, launchChromium } from '../support/browser';
import { eventually } from '../support/eventually';
import { Receiver } from '../support/receiver';
import { startTestStack, TestStack } from '../support/stack';

const PROJECT = `console-ordering-${Date.now().toString(36)}`;
const ACCOUNT = 'orderco';

let stack: TestStack;
let browser: Browser;
const problems: string[] = [];
/** h-0 is refused with 400, which adobe-best-effort makes DEAD at once: it holds its key under block. */
const receiver = new Receiver((req) => ((JSON.parse(req.body.toString('utf8') || '{}') as { id?: string }).id === 'h-0' ? { status: 400 } : { status: 204 }));
/** The event ids `held` received, in order (ledger, of the first test, takes every type). */
const receivedIds = () => receiver.requests.filter((r) => r.path === '/held').map((r) => (JSON.parse(r.body.toString('utf8') || '{}') as { id?: string }).id);

beforeAll(async () => {
  ensureConsoleBuilt();
  await receiver.start();
  stack = await startTestStack(PROJECT);
  browser = await launchChromium();
  expect((await stack.admin('POST', '/accounts', { id: ACCOUNT, name: 'Order Co' })).status).toBe(201);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await stack?.stop({ purge: true });
  await receiver.stop();
});

afterEach(() => {
  expect(problems.splice(0)).toEqual([]);
});

async function signedIn(): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 }, reducedMotion: 'reduce' });
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' && !/status of (400|404|409)/.test(m.text())) problems.push(`console error: ${m.text()}`);
  });
  await page.goto(`${stack.url}/admin/console/`);
  await field(page, 'Admin token or account key').fill(stack.config.adminToken);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await heading(page, 'Overview');
  await page.getByLabel('Account', { exact: true }).selectOption(ACCOUNT);
  return { context, page };
}

const field = (page: Page, label: string) => page.getByLabel(label, { exact: true });
const heading = (page: Page, name: string) => page.getByRole('heading', { level: 1, name }).waitFor();
const consoleAt = (hash: string) => `${stack.url}/admin/console/#${hash}`;

/** The destination's `ordering` as the API has it now. */
async function stored(id: string): Promise<unknown> {
  const res = await stack.admin('GET', `/accounts/${ACCOUNT}/destinations/${id}`);
  expect(res.status).toBe(200);
  return (res.body as { ordering?: unknown }).ordering;
}

test('the operator turns ordering per key on in the form, sees it shown, changes it and turns it off', async () => {
  const { context, page } = await signedIn();
  await page.goto(consoleAt('/destinations/new'));
  await heading(page, 'New destination');
  await field(page, 'Id').fill('ledger');
  await field(page, 'Webhook URL').fill(`${receiver.url}/ledger`);
  await field(page, 'Ordered per key').selectOption('block');
  // Batches too: the API refuses both, and says so under the ordering control.
  await page.getByLabel('Send events in batches').check();
  await field(page, 'Max events').fill('10');
  await field(page, 'Max wait (ms)').fill('500');
  await page.getByRole('button', { name: 'Create destination' }).click();
  await page.locator('#ordering-error').getByText('a destination takes either batch or ordering, not both').waitFor();
  expect(await field(page, 'Ordered per key').getAttribute('aria-describedby')).toBe('ordering-hint ordering-error');
  expect(await accessibilityProblems(page)).toEqual([]);

  await page.getByLabel('Send events in batches').uncheck();
  await page.getByRole('button', { name: 'Create destination' }).click();
  await heading(page, 'Destination ledger created');
  expect(await stored('ledger')).toEqual({ by: 'key', onFailure: 'block' });
  await page.getByRole('link', { name: 'Open ledger' }).click();
  await heading(page, 'ledger');
  expect(await page.getByTestId('ordering-setting').textContent()).toBe('on: a key whose event ends dead or queued is held until it is released');
  await page.getByTestId('no-held-keys').waitFor();

  await page.getByRole('link', { name: 'Edit' }).click();
  await heading(page, 'Edit ledger');
  expect(await field(page, 'Ordered per key').inputValue()).toBe('block');
  await field(page, 'Ordered per key').selectOption('skip');
  await page.getByRole('button', { name: 'Save' }).click();
  await heading(page, 'ledger');
  await page.getByTestId('ordering-setting').getByText('moves on to its next event').waitFor();
  expect(await stored('ledger')).toEqual({ by: 'key', onFailure: 'skip' });

  await page.getByRole('link', { name: 'Edit' }).click();
  await heading(page, 'Edit ledger');
  await field(page, 'Ordered per key').selectOption('');
  await page.getByRole('button', { name: 'Save' }).click();
  await heading(page, 'ledger');
  await page.getByTestId('ordering-setting').getByText('off', { exact: true }).waitFor();
  expect(await stored('ledger')).toBeUndefined();
  expect(await page.getByRole('heading', { name: 'Held keys' }).count()).toBe(0);
  await context.close();
});

test('a key held by a DEAD event is listed with a link to its delivery, and skipped: its next event goes out', async () => {
  const base = `/accounts/${ACCOUNT}/destinations/held`;
  expect((await stack.admin('PUT', base, { url: `${receiver.url}/held`, eventTypes: ['test.held'], policy: 'adobe-best-effort', ordering: { by: 'key', onFailure: 'block' } })).status).toBe(201);
  expect(await stack.admin('GET', `${base}/ordered-keys/blocked`)).toEqual({ status: 200, body: { keys: [] } });
  expect(await stack.admin('POST', `${base}/ordered-keys/skip`, { key: 'k' })).toMatchObject({ status: 409, body: { error: expect.stringContaining('is not held: nothing to skip') as unknown } });
  expect(await stack.admin('POST', `${base}/ordered-keys/skip`, { key: '' })).toMatchObject({ status: 400, body: { error: 'invalid skip request' } });
  expect((await stack.admin('GET', `/accounts/${ACCOUNT}/destinations/nowhere/ordered-keys/blocked`)).status).toBe(404);

  const events = ['h-0', 'h-1'].map((id) => ({ specversion: '1.0', id, source: '/console-ordering', type: 'test.held', heraldaccount: ACCOUNT, partitionkey: 'k', data: { id } }));
  expect((await stack.ingest({ 'content-type': 'application/cloudevents-batch+json' }, JSON.stringify(events))).status).toBe(202);
  const held = await eventually('key k held', async () => {
    const res = await stack.admin('GET', `${base}/ordered-keys/blocked`);
    return (res.body as { keys: unknown[] }).keys.length ? res.body : undefined;
  }, 30_000);
  expect(held).toEqual({ keys: [{ key: 'k', seq: 1, deliveryId: expect.stringMatching(/^orderco_held\./) as unknown, eventId: 'h-0', status: 'DEAD', why: 'block', since: expect.any(String) as unknown }] });
  expect(receivedIds()).toEqual(['h-0']);

  const { context, page } = await signedIn();
  await page.goto(consoleAt('/destinations/held'));
  await heading(page, 'held');
  const row = page.getByTestId('held-key').filter({ hasText: 'k' });
  await row.waitFor();
  expect(await row.getByRole('cell').nth(2).textContent()).toBe('dead');
  expect(await accessibilityProblems(page)).toEqual([]);

  // The event's link opens its delivery in the log, whose detail shows its place.
  await row.getByRole('link', { name: 'h-0' }).click();
  await heading(page, 'Delivery log');
  await page.getByRole('row').filter({ hasText: 'h-0' }).getByRole('button', { name: 'h-0' }).click();
  expect(await page.getByTestId('delivery-detail').getByTestId('delivery-order').textContent()).toBe('key k, place 1');
  await page.goBack();
  await heading(page, 'held');

  await row.getByRole('button', { name: 'Skip' }).click();
  await page.getByRole('button', { name: 'Yes, skip' }).click();
  await page.getByRole('status').getByText('Key k moved past event h-0: its next event is on its way.').waitFor();
  await page.getByTestId('no-held-keys').waitFor();
  await eventually('h-1 delivered', async () => (receivedIds().includes('h-1') ? true : undefined), 30_000);
  expect(await stack.admin('GET', `${base}/ordered-keys/blocked`)).toEqual({ status: 200, body: { keys: [] } });
  await context.close();
});
