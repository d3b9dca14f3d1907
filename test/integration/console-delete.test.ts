/**
 * Issue 32 item 5 in the web console (real Chromium): deleting a destination with queued
 * deliveries is refused with how many and what to do, and offers to delete it anyway, making
 * them dead; confirmed, it is deleted and its deliveries are DEAD. On the old code the first
 * click deleted it and orphaned the three.
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

test('refused with the counts and the ways out, then "Delete and make them dead" deletes it and makes them DEAD', async () => {
  expect((await stack.admin('PUT', '/destinations/orders', { url: `${receiver.url}/orders`, eventTypes: ['test.*'], failureMode: 'queue' })).status).toBe(201);
  for (const id of EVENTS) {
    expect((await stack.ingest({ 'ce-id': id, 'ce-source': SOURCE, 'ce-type': 'test.order', 'ce-specversion': '1.0', 'content-type': 'application/json' }, '{}')).status).toBe(202);
  }
  const statuses = async () => Promise.all(EVENTS.map(async (e) => (await stack.runtime.deliveries.get(deliveryId('orders', eventKey({ source: SOURCE, id: e }))))?.status));
  await eventually('3 QUEUED', async () => ((await statuses()).every((s) => s === 'QUEUED') ? true : undefined));

  const context = await browser.newContext({ viewport: { width: 1280, height: 860 }, reducedMotion: 'reduce' });
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  await page.goto(`${stack.url}/admin/console/`);
  await page.getByLabel('Admin token or account key', { exact: true }).fill(stack.config.adminToken);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
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
