import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import AxeBuilder from '@axe-core/playwright';
import { Browser, chromium, Page } from 'playwright-core';

const ROOT = join(__dirname, '..', '..');

/**
 * Debian's Chromium (apt-get install chromium; .ci/run installs it), or HERALD_CHROMIUM.
 * Playwright's own browser download cannot be fetched here.
 */
export const CHROMIUM = process.env.HERALD_CHROMIUM ?? '/usr/bin/chromium';

/**
 * Headless and quiet: without the background-networking flags Chromium calls Google's
 * services (updates, sync, safe browsing) on a network that has none. Playwright gives each
 * launch a fresh profile directory of its own (--user-data-dir) and removes it on close.
 */
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-default-apps', '--disable-extensions', '--metrics-recording-only', '--no-default-browser-check'];

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: apt-get install -y chromium (as .ci/run does), or set HERALD_CHROMIUM`);
  return chromium.launch({ executablePath: CHROMIUM, headless: true, chromiumSandbox: false, args: ARGS, timeout: 60_000 });
}

function newest(dir: string): number {
  let t = 0;
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    const s = statSync(p);
    t = Math.max(t, s.isDirectory() ? newest(p) : s.mtimeMs);
  }
  return t;
}

/** Builds console/dist when it is missing or older than its sources (npm test builds it first; a lone `npx jest` may not have). */
export function ensureConsoleBuilt(): void {
  const index = join(ROOT, 'console', 'dist', 'index.html');
  if (existsSync(index) && statSync(index).mtimeMs >= newest(join(ROOT, 'console', 'src'))) return;
  execFileSync(process.execPath, [join(ROOT, 'console', 'build.mjs')], { stdio: 'pipe' });
}

/** axe-core on the page as it stands: the serious and critical violations, described one a line ([] when none). */
export async function accessibilityProblems(page: Page): Promise<string[]> {
  const result = await new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice']).analyze();
  return result.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.impact} ${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).slice(0, 3).join('; ')})`);
}

/** The docs' screenshots, rewritten only when asked: HERALD_UPDATE_SCREENSHOTS=1. */
export const DOCS_SCREENSHOTS = join(ROOT, 'docs', 'screenshots');

/**
 * Where screenshot() writes: docs/screenshots/ with HERALD_UPDATE_SCREENSHOTS=1, else a
 * temporary directory of this run (still taken, so the code path runs; the docs stay as
 * they are, and a test run leaves git clean).
 */
export function screenshotsDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.HERALD_UPDATE_SCREENSHOTS === '1' ? DOCS_SCREENSHOTS : join(tmpdir(), `herald-screenshots-${process.pid}`);
}

export const SCREENSHOTS = screenshotsDir();

/** A screenshot for the docs, 1280 px wide (the page's viewport), under SCREENSHOTS; a secret shown once is masked. */
export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  const path = join(SCREENSHOTS, `${name}.png`);
  await page.screenshot({ path, fullPage: true, animations: 'disabled', caret: 'hide', mask: [page.getByTestId('secret-value')], maskColor: '#c9ced6' });
  return path;
}

/** Signs the operator into the console at `consoleUrl` and, given one, selects `account`. */
export async function signInAsOperator(page: Page, consoleUrl: string, adminToken: string, account?: string): Promise<void> {
  await page.goto(consoleUrl);
  await page.getByLabel('Admin token or account key', { exact: true }).fill(adminToken);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
  if (account === undefined) return;
  await page.getByLabel('Account', { exact: true }).selectOption(account);
  if ((await page.getByLabel('Account', { exact: true }).inputValue()) !== account) throw new Error(`the console did not select account ${account}`);
}
