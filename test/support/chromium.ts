import * as fs from 'fs';
import { AxeBuilder } from '@axe-core/playwright';
import * as path from 'path';
import { Browser, BrowserContext, chromium, Page } from 'playwright-core';

/**
 * Headless Chromium (Debian's `chromium`, driven by playwright-core) for the web app's browser tests:
 * launch, a page per language and colour scheme, axe checks and screenshots under test-output/.
 */
export const chromiumPath = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
export const chromiumAvailable = fs.existsSync(chromiumPath);

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

export type Scheme = 'light' | 'dark';
export const TABLET = { width: 768, height: 1024 };
export const DESKTOP = { width: 1280, height: 900 };

export interface OpenedPage {
  context: BrowserContext;
  page: Page;
  /** Script errors and Content-Security-Policy refusals seen so far (a test expects none). */
  problems: string[];
}

/**
 * A fresh browser profile in `locale` (navigator.languages and Accept-Language) and `scheme`
 * (prefers-color-scheme), its requests coming from `ip` (the app trusts X-Forwarded-For from loopback),
 * so that per-address limits of one test do not reach another.
 */
export async function openPage(
  browser: Browser,
  opts: { locale: string; scheme: Scheme; ip: string; viewport?: { width: number; height: number } },
): Promise<OpenedPage> {
  const context = await browser.newContext({
    locale: opts.locale,
    colorScheme: opts.scheme,
    viewport: opts.viewport ?? DESKTOP,
    extraHTTPHeaders: { 'X-Forwarded-For': opts.ip },
  });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(`script error: ${e.message}`));
  page.on('console', (m) => {
    if (/Content.Security.Policy|Refused to/i.test(m.text())) problems.push(`console: ${m.text()}`);
  });
  return { context, page, problems };
}

/** Serious and critical axe violations of the page as it is now (@axe-core/playwright: WCAG 2.x A and AA rules, best practices). */
export async function axeViolations(page: Page): Promise<string[]> {
  // AxeBuilder injects axe through the DevTools protocol: not subject to the page's Content-Security-Policy.
  const { violations } = await new AxeBuilder({ page }).analyze();
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}

const outputRoot = path.resolve(__dirname, '..', '..', 'test-output');

/** A full-page screenshot to test-output/<folder>/<name>.png (look at them: the tests cannot judge a layout). */
export async function screenshot(page: Page, folder: string, name: string): Promise<void> {
  const dir = path.join(outputRoot, folder);
  fs.mkdirSync(dir, { recursive: true });
  // From the top: a page scrolled by the journey would show its sticky parts (the section list) mid-page.
  await page.evaluate('window.scrollTo(0, 0)');
  await page.screenshot({ path: path.join(dir, `${name}.png`), fullPage: true });
}
