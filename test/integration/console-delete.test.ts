/**
 * Issue 32 item 5 in the web console (real Chromium): deleting a destination with queued
 * deliveries is refused with how many and what to do, and offers to delete it anyway, making
 * them dead; confirmed, it is deleted and its deliveries are DEAD. On the old code the first
 * click deleted it and orphaned the three.
 * Beside it (issue 57): a destination the suspension check found failing shows it where its
 * state is shown, on the list and on its page, with the fraction of the threshold reached.
 */
import type { Browser } from 'playwright-core';
import { deliveryId } from '../../shared/domain/retry/delivery';
import { eventKey } from '../../shared/domain/events/event';
import { accessibilityProblems, ensureConsoleBuilt, launchChromium } from '../support/browser';
import { eventually } from '../support/eventually';
import { Receiver } from '../support/receiver';
import { startTestStack, TestStack } from '../support/stack';

const PROJECT = `console-delete-${Date.now().toString(36)}`;
const SOURCE = '/console-delete-test';
const EVENTS = ['c1', 'c2', 'c3'];

let stack: TestStack;
let receiver: Receiver;
let browser: Browser;

beforeAll(async () => {
  ensureConsoleBuilt();
  receiver = await new Receiver(() => ({ status: 500 })).start();
  stack = await startTestStack(PROJECT);
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await stack?.stop({ purge: true });
  await receiver?.stop();
});

/** A new page signed in with the admin token, on the Overview. */
async function signedIn() {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 }, reducedMotion: 'reduce' });
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  await page.goto(`${stack.url}/admin/console/`);
  await page.getByLabel('Admin token or account key', { exact: true }).fill(stack.config.adminToken);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
  return { context, page };
}

test('a failing destination shows the fraction of its threshold it reached beside its state, on the list and its page', async () => {
  expect((await stack.admin('PUT', '/destinations/warned', { url: `${receiver.url}/warned`, eventTypes: ['other.*'] })).status).toBe(201);
  expect((await stack.admin('PUT', '/destinations/calm', { url: `${receiver.url}/calm`, eventTypes: ['other.*'] })).status).toBe(201);
  // As the suspension check writes it when the failure rate crosses 90 % of the rate that suspends.
  const failing = { fraction: 0.9, at: '2026-12-06T10:00:00.000Z', failureRate: 0.046 };
  await stack.runtime.destinations.update('warned', (d) => d && { ...d, failing });
  expect((await stack.admin('GET', '/destinations/warned')).body).toMatchObject({ status: 'active', failing });
  const { context, page } = await signedIn();
  const shown = 'failing: failure rate 4.6 %, at 90 % of the rate that suspends it';
  await page.goto(`${stack.url}/admin/console/#/destinations`);
  await page.getByRole('heading', { level: 1, name: 'Destinations' }).waitFor();
  await page.getByRole('row').filter({ hasText: 'warned' }).getByText(shown).waitFor();
  expect(await page.getByRole('row').filter({ hasText: 'calm' }).getByText('failing', { exact: false }).count()).toBe(0);
  await page.goto(`${stack.url}/admin/console/#/destinations/warned`);
  await page.getByRole('heading', { level: 1, name: 'warned' }).waitFor();
  await page.locator('dl.props').getByText(shown).waitFor();
  expect(await page.locator('dl.props').getByText('active', { exact: true }).count()).toBe(1);
  expect(await accessibilityProblems(page)).toEqual([]);
  await context.close();
  for (const id of ['warned', 'calm']) expect((await stack.admin('DELETE', `/destinations/${id}`)).status).toBeLessThan(300);
});

test('refused with the counts and the ways out, then "Delete and make them dead" deletes it and makes them DEAD', async () => {
  expect((await stack.admin('PUT', '/destinations/orders', { url: `${receiver.url}/orders`, eventTypes: ['test.*'], failureMode: 'queue' })).status).toBe(201);
  for (const id of EVENTS) {
    expect((await stack.ingest({ 'ce-id': id, 'ce-source': SOURCE, 'ce-type': 'test.order', 'ce-specversion': '1.0', 'content-type': 'application/json' }, '{}')).status).toBe(202);
  }
  const statuses = async () => Promise.all(EVENTS.map(async (e) => (await stack.runtime.deliveries.get(deliveryId('orders', eventKey({ source: SOURCE, id: e }))))?.status));
  await eventually('3 QUEUED', async () => ((await statuses()).every((s) => s === 'QUEUED') ? true : undefined));

  const { context, page } = await signedIn();
  await page.goto(`${stack.url}/admin/console/#/destinations/orders`);
  await page.getByRole('heading', { level: 1, name: 'orders' }).waitFor();

  await page.getByRole('button', { name: 'Delete destination' }).click();
  await page.getByRole('button', { name: 'Yes, delete destination' }).click();
  const refusal = page.getByTestId('delete-refused');
  await refusal.getByText('Not deleted: 3 deliveries are still to send').waitFor();
  await refusal.getByText('0 pending, 0 in flight, 3 queued').waitFor();
  expect(await refusal.textContent()).toContain('Redeliver the queued ones');
  expect(await accessibilityProblems(page)).toEqual([]);
  expect((await stack.admin('GET', '/destinations/orders')).status).toBe(200);

  await refusal.getByRole('button', { name: 'Delete and make 3 dead' }).click();
  await page.getByRole('button', { name: 'Yes, delete and make 3 dead' }).click();
  await page.getByRole('heading', { level: 1, name: 'Destinations' }).waitFor();
  expect((await stack.admin('GET', '/destinations/orders')).status).toBe(404);
  expect(await statuses()).toEqual(['DEAD', 'DEAD', 'DEAD']);
  await context.close();
});
