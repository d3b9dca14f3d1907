/**
 * A destination's `batch` (issue 37) in the web console, real Chromium against a whole local
 * Herald: the operator turns batching on in the destination form (a bound broken is caught
 * before anything is sent), sees it saved and shown, finds it again when editing, changes it
 * and turns it off; a customer does the same through a portal link; the delivery log shows the
 * batch a delivery went in. Nothing is published: what batching does to the requests is
 * test/integration/batched-delivery.test.ts's to show, this is the setting's round trip.
 * Beside it, the destination's CEL `filter` (issue 56): typed in the same form, tried with
 * "Try it" on the account's samples (an invalid one named with its position), saved and shown,
 * and marked on the Event types page beside the destinations that take a type unfiltered.
 */
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { DeliveryRecord, deliveryId } from '../../shared/domain/retry/delivery';
import { eventKey } from '../../shared/domain/events/event';
import { internalDestinationId } from '../../shared/domain/ids';
import { accessibilityProblems, ensureConsoleBuilt, launchChromium } from '../support/browser';
import { Receiver } from '../support/receiver';
import { startTestStack, TestStack } from '../support/stack';

const PROJECT = `console-batch-${Date.now().toString(36)}`;
const ACCOUNT = 'batchco';

let stack: TestStack;
let receiver: Receiver;
let browser: Browser;
const problems: string[] = [];

beforeAll(async () => {
  ensureConsoleBuilt();
  receiver = await new Receiver(() => ({ status: 204 })).start();
  // The reconciler records each event type's sample soon after its event (the filter's Try it reads them).
  stack = await startTestStack(PROJECT, { HERALD_RECONCILE_AFTER_MS: '1000', HERALD_RECONCILE_INTERVAL_MS: '500' });
  browser = await launchChromium();
  expect((await stack.admin('POST', '/accounts', { id: ACCOUNT, name: 'Batch Co' })).status).toBe(201);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await stack?.stop({ purge: true });
  await receiver?.stop();
});

afterEach(() => {
  expect(problems.splice(0)).toEqual([]);
});

async function newPage(): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 }, reducedMotion: 'reduce' });
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' && !/status of (400|404)/.test(m.text())) problems.push(`console error: ${m.text()}`);
  });
  return { context, page };
}

async function heading(page: Page, name: string): Promise<void> {
  await page.getByRole('heading', { level: 1, name }).waitFor();
}

/** The destination as the API has it now. */
async function stored(id: string): Promise<{ status: number; batch?: unknown }> {
  const res = await stack.admin('GET', `/accounts/${ACCOUNT}/destinations/${id}`);
  return { status: res.status, ...(res.status === 200 ? { batch: (res.body as { batch?: unknown }).batch } : {}) };
}

const field = (page: Page, label: string) => page.getByLabel(label, { exact: true });

/** Signed in as the operator, in the account, on the form of a new destination. */
async function newDestinationForm(): Promise<{ context: BrowserContext; page: Page }> {
  const { context, page } = await newPage();
  await page.goto(`${stack.url}/admin/console/`);
  await field(page, 'Admin token or account key').fill(stack.config.adminToken);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await heading(page, 'Overview');
  await page.getByLabel('Account', { exact: true }).selectOption(ACCOUNT);
  await page.goto(`${stack.url}/admin/console/#/destinations/new`);
  await heading(page, 'New destination');
  return { context, page };
}

test('the operator turns batching on in the form, sees it saved and shown, edits it, and turns it off', async () => {
  const { context, page } = await newDestinationForm();
  await field(page, 'Id').fill('bulk');
  await field(page, 'Webhook URL').fill(`${receiver.url}/bulk`);
  // Off until ticked: the fields appear with it.
  expect(await field(page, 'Max events').count()).toBe(0);
  await page.getByLabel('Send events in batches').check();
  expect(await accessibilityProblems(page)).toEqual([]);

  // Out of bounds, and not a whole number: said under each field, and nothing is sent.
  await field(page, 'Max events').fill('1');
  await field(page, 'Max wait (ms)').fill('1.5');
  await page.getByRole('button', { name: 'Create destination' }).click();
  await page.getByRole('alert').filter({ hasText: 'The batch settings are out of bounds: nothing was sent.' }).waitFor();
  expect(await page.locator('#batchMaxEvents-error').textContent()).toBe('batch.maxEvents must be 2–1000');
  expect(await page.locator('#batchMaxWaitMs-error').textContent()).toBe('batch.maxWaitMs must be a whole number, 100–60000');
  expect(await field(page, 'Max events').getAttribute('aria-invalid')).toBe('true');
  expect(await field(page, 'Max events').getAttribute('aria-describedby')).toBe('batchMaxEvents-hint batchMaxEvents-error');
  expect(await accessibilityProblems(page)).toEqual([]);
  expect((await stored('bulk')).status).toBe(404);

  // Within bounds, max bytes left empty: the API's default.
  await field(page, 'Max events').fill('50');
  await field(page, 'Max wait (ms)').fill('1500');
  const created = page.waitForResponse((r) => r.request().method() === 'PUT' && r.url().endsWith(`/accounts/${ACCOUNT}/destinations/bulk`));
  await page.getByRole('button', { name: 'Create destination' }).click();
  const answer = await created;
  expect(answer.status()).toBe(201);
  expect(((await answer.json()) as { batch?: unknown }).batch).toEqual({ maxEvents: 50, maxWaitMs: 1500 });
  await heading(page, 'Destination bulk created');
  expect(await stored('bulk')).toEqual({ status: 200, batch: { maxEvents: 50, maxWaitMs: 1500 } });

  // Shown on its page.
  await page.getByRole('link', { name: 'Open bulk' }).click();
  await heading(page, 'bulk');
  expect(await page.getByTestId('batch-setting').textContent()).toBe('up to 50 events and 1048576 bytes a request, sent at the latest 1500 ms after the oldest arrived');

  // Editing finds the setting as saved; a byte limit is added.
  await page.getByRole('link', { name: 'Edit' }).click();
  await heading(page, 'Edit bulk');
  expect(await page.getByLabel('Send events in batches').isChecked()).toBe(true);
  expect(await field(page, 'Max events').inputValue()).toBe('50');
  expect(await field(page, 'Max wait (ms)').inputValue()).toBe('1500');
  expect(await field(page, 'Max bytes (optional)').inputValue()).toBe('');
  await field(page, 'Max bytes (optional)').fill('65536');
  await page.getByRole('button', { name: 'Save' }).click();
  await heading(page, 'bulk');
  await page.getByTestId('batch-setting').getByText('up to 50 events and 65536 bytes').waitFor();
  expect(await stored('bulk')).toEqual({ status: 200, batch: { maxEvents: 50, maxWaitMs: 1500, maxBytes: 65536 } });

  // Unticked, the whole spec is saved without it: one event per request again.
  await page.getByRole('link', { name: 'Edit' }).click();
  await heading(page, 'Edit bulk');
  expect(await field(page, 'Max bytes (optional)').inputValue()).toBe('65536');
  await page.getByLabel('Send events in batches').uncheck();
  await page.getByRole('button', { name: 'Save' }).click();
  await heading(page, 'bulk');
  await page.getByTestId('batch-setting').getByText('off: one event per request').waitFor();
  expect(await stored('bulk')).toEqual({ status: 200 });
  await context.close();
});

test("a customer sets batching through a portal link, and the log shows a delivery's batch", async () => {
  expect((await stack.admin('PUT', `/accounts/${ACCOUNT}/destinations/portal-hook`, { url: `${receiver.url}/portal-hook`, eventTypes: ['com.example.never'] })).status).toBe(201);
  // A delivery as a batched attempt records it: the batch's id, its place (from 0) and size.
  const internal = internalDestinationId(ACCOUNT, 'portal-hook');
  const record: DeliveryRecord = {
    id: deliveryId(internal, eventKey({ source: '/shop', id: 'in-batch-1' })),
    destinationId: internal,
    eventId: 'in-batch-1',
    eventSource: '/shop',
    eventType: 'com.example.never',
    status: 'DELIVERED',
    attempts: 1,
    availableAt: '2026-01-01T00:00:00.000Z',
    publishedAt: '2026-01-01T00:00:00.000Z',
    deliveredAt: '2026-01-01T00:00:01.000Z',
    batch: { id: 'b_consoleBatchTest0000', position: 2, size: 7 },
  };
  await stack.runtime.deliveries.put(record);

  const minted = await stack.admin('POST', `/accounts/${ACCOUNT}/portal-links`, { ttlSeconds: 600 });
  expect(minted.status).toBe(201);
  const link = (minted.body as { url: string }).url;
  const { context, page } = await newPage();
  await page.goto(link);
  await heading(page, 'Overview');
  await page.goto(`${link.split('#')[0]}#/destinations/portal-hook/edit`);
  await heading(page, 'Edit portal-hook');
  expect(await page.getByLabel('Send events in batches').isChecked()).toBe(false);
  await page.getByLabel('Send events in batches').check();
  await field(page, 'Max events').fill('1000');
  await field(page, 'Max wait (ms)').fill('60000');
  await field(page, 'Max bytes (optional)').fill('1024');
  await page.getByRole('button', { name: 'Save' }).click();
  await heading(page, 'portal-hook');
  await page.getByTestId('batch-setting').getByText('up to 1000 events and 1024 bytes a request, sent at the latest 60000 ms').waitFor();
  expect(await stored('portal-hook')).toEqual({ status: 200, batch: { maxEvents: 1000, maxWaitMs: 60000, maxBytes: 1024 } });

  await page.goto(`${link.split('#')[0]}#/log?destination=portal-hook`);
  await heading(page, 'Delivery log');
  await page.getByRole('row').filter({ hasText: 'in-batch-1' }).getByRole('button', { name: 'in-batch-1' }).click();
  const batch = page.getByTestId('delivery-detail').getByTestId('delivery-batch');
  expect(await batch.textContent()).toBe('b_consoleBatchTest0000, event 3 of 7');
  expect(await accessibilityProblems(page)).toEqual([]);
  await context.close();
});

test('the operator writes a filter, tries it on the samples (an invalid one named with its position), saves it and sees it', async () => {
  for (const [id, type, amount] of [
    ['f-1', 'com.example.order.created', 1500],
    ['f-2', 'com.example.order.cancelled', 20],
  ] as const) {
    const res = await stack.ingest({ 'ce-id': id, 'ce-source': '/shop', 'ce-type': type, 'ce-specversion': '1.0', 'ce-heraldaccount': ACCOUNT, 'content-type': 'application/json' }, JSON.stringify({ amount }));
    expect(res.status).toBe(202);
  }
  const sampled = async () => ((await stack.admin('GET', `/accounts/${ACCOUNT}/event-types`)).body as { eventTypes: unknown[] }).eventTypes.length;
  for (let i = 0; (await sampled()) < 2; i++) {
    if (i > 150) throw new Error('the event types were not sampled within 30 s');
    await new Promise((r) => setTimeout(r, 200));
  }

  const { context, page } = await newDestinationForm();
  await field(page, 'Id').fill('big-orders');
  await field(page, 'Webhook URL').fill(`${receiver.url}/big`);
  await field(page, 'Event types').fill('com.example.order.*');

  // Invalid: Herald names the line and column, beside the field; nothing is saved.
  await field(page, 'Filter (optional)').fill('data.amount >');
  await page.getByRole('button', { name: 'Try it' }).click();
  await page.getByRole('alert').filter({ hasText: 'The filter could not be tried' }).getByText('at line 1, column 14').waitFor();

  // Valid: each sample event with whether the destination would take it.
  await field(page, 'Filter (optional)').fill('data.amount > 1000');
  await page.getByRole('button', { name: 'Try it' }).click();
  await page.getByRole('status').filter({ hasText: 'Takes 1 of 2 sample events.' }).waitFor();
  const rows = await page.getByTestId('filter-trial').allTextContents();
  expect(rows.sort()).toEqual(['com.example.order.cancelledf-2no', 'com.example.order.createdf-1yes']);
  expect(await accessibilityProblems(page)).toEqual([]);

  const created = page.waitForResponse((r) => r.request().method() === 'PUT' && r.url().endsWith(`/accounts/${ACCOUNT}/destinations/big-orders`));
  await page.getByRole('button', { name: 'Create destination' }).click();
  expect((await created).status()).toBe(201);
  expect(((await stack.admin('GET', `/accounts/${ACCOUNT}/destinations/big-orders`)).body as { filter?: string }).filter).toBe('data.amount > 1000');
  await page.getByRole('link', { name: 'Open big-orders' }).click();
  await heading(page, 'big-orders');
  await page.getByTestId('filter-setting').getByText('data.amount > 1000').waitFor();
  expect(await page.getByTestId('filter-setting').textContent()).toContain('last hour: matched 0, passed 0, dropped 0, errors 0');

  // The Event types page: every destination subscribed by type, the filtering one marked with its filter and the share it took.
  expect((await stack.admin('PUT', `/accounts/${ACCOUNT}/destinations/all-orders`, { url: `${receiver.url}/all`, eventTypes: ['com.example.order.*'] })).status).toBe(201);
  for (const [id, amount] of [['f-3', 3000], ['f-4', 7]] as const) {
    const res = await stack.ingest({ 'ce-id': id, 'ce-source': '/shop', 'ce-type': 'com.example.order.created', 'ce-specversion': '1.0', 'ce-heraldaccount': ACCOUNT, 'content-type': 'application/json' }, JSON.stringify({ amount }));
    expect(res.status).toBe(202);
  }
  type Listed = { type: string; destinations: string[]; filtered: { destination: string; filter: string; filterPassed1h: number; filtered1h: number; filterErrors1h: number }[] };
  const createdType = async () => ((await stack.admin('GET', `/accounts/${ACCOUNT}/event-types`)).body as { eventTypes: Listed[] }).eventTypes.find((t) => t.type === 'com.example.order.created')!;
  for (let i = 0; (await createdType()).filtered[0]?.filtered1h !== 1; i++) {
    if (i > 150) throw new Error(`the filter's counts did not show within 30 s: ${JSON.stringify(await createdType())}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  expect(await createdType()).toMatchObject({ destinations: expect.arrayContaining(['all-orders', 'big-orders']) as unknown, filtered: [{ destination: 'big-orders', filter: 'data.amount > 1000', filterPassed1h: 1, filtered1h: 1, filterErrors1h: 0 }] });
  await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Event types', exact: true }).click();
  await heading(page, 'Event types');
  const createdRow = page.getByTestId('event-type').filter({ hasText: 'com.example.order.created' });
  const takers = createdRow.getByTestId('event-type-destination');
  await takers.first().waitFor();
  // (Another test of this file registers a batched destination on the same types: it is listed too.)
  expect(await takers.allTextContents()).toEqual(expect.arrayContaining(['all-orders', 'big-orders filter data.amount > 1000: took 1 of 2 events of its types in the last hour (50 %)']));
  expect(await createdRow.getByTestId('event-type-filter').count()).toBe(1);
  expect(await accessibilityProblems(page)).toEqual([]);
  await page.goto(`${stack.url}/admin/console/#/destinations/big-orders`);
  await heading(page, 'big-orders');

  // Editing finds it; emptied, the destination stops filtering.
  await page.getByRole('link', { name: 'Edit' }).click();
  await heading(page, 'Edit big-orders');
  expect(await field(page, 'Filter (optional)').inputValue()).toBe('data.amount > 1000');
  await field(page, 'Filter (optional)').fill('');
  await page.getByRole('button', { name: 'Save' }).click();
  await heading(page, 'big-orders');
  await page.getByTestId('filter-setting').getByText('none: every event of its types').waitFor();
  await context.close();
});
