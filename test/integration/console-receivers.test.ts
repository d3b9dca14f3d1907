/**
 * Issue 55's console views in real Chromium: a destination reaching its receiver with a secret
 * header, an API key, a client certificate and a signature migration, its headers rotated with a
 * grace period while the receiver still takes only the old key. The operator's console and the
 * customer's portal show the auth type, the client certificate's subject, the profiles and the
 * header names, and the attempt detail which auth and profiles were used and that the replaced
 * headers were sent again; no page's HTML holds a credential.
 */
import { randomBytes } from 'node:crypto';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { accessibilityProblems, ensureConsoleBuilt, launchChromium, signInAsOperator } from '../support/browser';
import { Receiver } from '../support/receiver';
import { patient } from '../support/patience';
import { startTestStack, TestStack } from '../support/stack';
import { makeThrowawayPki } from '../support/throwaway-ca';

const PROJECT = `console-receivers-${Date.now().toString(36)}`;
const ACCOUNT = 'rcvco';
const API_KEY = `apikey-${randomBytes(12).toString('hex')}`;
const OLD_HEADER_KEY = `hdrold-${randomBytes(12).toString('hex')}`;
const NEW_HEADER_KEY = `hdrnew-${randomBytes(12).toString('hex')}`;
const pki = makeThrowawayPki(['127.0.0.1']);
const pemBody = (pem: string) => pem.split('\n').filter((l) => l && !l.startsWith('-----')).join('');

let stack: TestStack;
let browser: Browser;
let consoleUrl: string;
/** Takes the API key and only the old header key: it has not switched yet. */
const receiver = new Receiver((req) => ({ status: req.headers['x-api-key'] === API_KEY && req.headers['x-partner-key'] === OLD_HEADER_KEY ? 204 : 403 }));
/** Each page's HTML as the browser rendered it, scanned for the credentials at the end. */
const pages: { where: string; html: string }[] = [];
const problems: string[] = [];

async function newPage(): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 }, reducedMotion: 'reduce' });
  const page = await context.newPage();
  page.setDefaultTimeout(patient(15_000));
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  return { context, page };
}

async function keep(page: Page, where: string): Promise<void> {
  await page.waitForLoadState('networkidle');
  pages.push({ where, html: await page.content() });
}

const heading = (page: Page, name: string) => page.getByRole('heading', { level: 1, name }).waitFor();

/** The destination page and the delivery log's detail of `eventId`, under `base` (the console or the portal). */
async function visit(page: Page, base: string, who: string, eventId: string): Promise<void> {
  await page.goto(`${base}#/destinations/partner`);
  await heading(page, 'partner');
  const setting = page.getByTestId('receiver-setting');
  await setting.getByText(/auth apiKey \(X-Api-Key\)/).waitFor();
  const text = (await setting.textContent()) ?? '';
  expect(text).toContain('client certificate CN=client');
  expect(text).toMatch(/signed standard-webhooks and github until .+, then github/);
  expect(text).toMatch(/headers X-Tenant, X-Partner-Key \(replaced ones until /);
  expect(await accessibilityProblems(page)).toEqual([]);
  await keep(page, `${who} destination`);
  await page.goto(`${base}#/destinations`);
  await heading(page, 'Destinations');
  await keep(page, `${who} destinations`);

  await page.goto(`${base}#/log`);
  await heading(page, 'Delivery log');
  const row = page.getByRole('row').filter({ hasText: eventId });
  const end = Date.now() + patient(30_000);
  while ((await row.filter({ hasText: 'delivered' }).count()) === 0) {
    if (Date.now() > end) throw new Error(`${eventId} not shown delivered`);
    await page.waitForTimeout(400);
    await page.getByRole('button', { name: 'Refresh' }).click();
  }
  await row.getByRole('button', { name: eventId }).click();
  const attempt = page.getByTestId('delivery-detail').getByTestId('attempt').first();
  const used = (await attempt.getByTestId('attempt-receiver').textContent()) ?? '';
  expect(used).toMatch(/Receiver auth API key · signed standard-webhooks and github · sent again with the replaced headers/);
  const sent = (await attempt.getByLabel('Request headers').textContent()) ?? '';
  expect(sent).toContain('x-partner-key: ••••••');
  expect(sent).toContain('x-api-key: ••••••');
  expect(sent).toContain('x-tenant: acme');
  expect(await accessibilityProblems(page)).toEqual([]);
  await keep(page, `${who} delivery detail`);
}

beforeAll(async () => {
  ensureConsoleBuilt();
  await receiver.start();
  stack = await startTestStack(PROJECT);
  browser = await launchChromium();
  consoleUrl = `${stack.url}/admin/console/`;
}, patient(120_000));

afterAll(async () => {
  await browser?.close();
  await stack?.stop({ purge: true });
  await receiver.stop();
});

test('the console and the portal show how the receiver is reached and was reached, never a credential', async () => {
  expect((await stack.admin('POST', '/accounts', { id: ACCOUNT, name: 'Receiver Co' })).status).toBe(201);
  const made = await stack.admin('POST', `/accounts/${ACCOUNT}/keys`, { name: 'publisher' });
  const key = (made.body as { key: string }).key;
  const created = await stack.admin('PUT', `/accounts/${ACCOUNT}/destinations/partner`, {
    url: `${receiver.url}/partner`,
    eventTypes: ['com.example.partner'],
    headers: { 'X-Tenant': 'acme', 'X-Partner-Key': { secret: OLD_HEADER_KEY } },
    auth: { type: 'apiKey', header: 'X-Api-Key', value: API_KEY },
    tls: { clientCertificate: pki.clientCert, clientKey: pki.clientKey, ca: pki.ca },
    signature: { from: 'standard-webhooks', to: 'github', cutoverAt: new Date(Date.now() + 3600_000).toISOString() },
  });
  expect(created.status).toBe(201);
  const rotated = await stack.admin('POST', `/accounts/${ACCOUNT}/destinations/partner/rotate-auth`, { headers: { 'X-Tenant': 'acme', 'X-Partner-Key': { secret: NEW_HEADER_KEY } }, graceSeconds: 3600 });
  expect(rotated.status).toBe(200);
  const published = await fetch(`${stack.url}/ingest`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/cloudevents+json' },
    body: JSON.stringify({ specversion: '1.0', id: 'rx-1', source: 'shop', type: 'com.example.partner', data: { id: 'rx-1' } }),
  });
  expect(published.status).toBe(202);

  const operator = await newPage();
  await signInAsOperator(operator.page, consoleUrl, stack.config.adminToken, ACCOUNT);
  await visit(operator.page, consoleUrl, 'console', 'rx-1');
  await operator.context.close();

  const minted = await stack.admin('POST', `/accounts/${ACCOUNT}/portal-links`, { ttlSeconds: 600 });
  expect(minted.status).toBe(201);
  const link = (minted.body as { url: string }).url;
  const portal = await newPage();
  await portal.page.goto(link);
  await heading(portal.page, 'Overview');
  await visit(portal.page, link.split('#')[0]!, 'portal', 'rx-1');
  await portal.context.close();

  const credentials = [API_KEY, OLD_HEADER_KEY, NEW_HEADER_KEY, pemBody(pki.clientKey).slice(0, 40), pemBody(pki.clientCert).slice(0, 40)];
  expect(pages).toHaveLength(6);
  const leaks = pages.flatMap((p) => [...credentials.filter((c) => p.html.includes(c)).map((c) => `${p.where} holds ${c.slice(0, 8)}…`), ...(/PRIVATE KEY|BEGIN CERTIFICATE/.test(p.html) ? [`${p.where} holds a PEM`] : [])]);
  expect(leaks).toEqual([]);
  expect(problems).toEqual([]);
}, patient(240_000));
