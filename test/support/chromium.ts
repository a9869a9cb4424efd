import fs from 'node:fs';
import { createRequire } from 'node:module';
import { after, type TestContext } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright-core';

// What the dashboard's browser tests share: Debian's Chromium through playwright-core, one browser
// per test file, a page that collects script errors, and axe-core's serious and critical findings.

export const CHROMIUM = '/usr/bin/chromium';

/** Why a browser test is skipped here, or null: Chromium must be installed, and they run on SQLite only. */
export const browserSkipReason: string | null = !fs.existsSync(CHROMIUM)
  ? `${CHROMIUM} is not installed`
  : process.env.TEST_ENGINE === 'postgres'
    ? 'browser tests run on SQLite only'
    : null;

const AXE_SOURCE = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** axe-core's serious and critical violations on the page, with the first few elements of each. */
export async function accessibilityProblems(page: Page): Promise<string[]> {
  await page.evaluate(AXE_SOURCE);
  const violations = await page.evaluate(async () => {
    const result = await (globalThis as any).axe.run((globalThis as any).document, { resultTypes: ['violations'] });
    return result.violations.map((v: any) => ({
      id: v.id,
      impact: v.impact,
      nodes: v.nodes.slice(0, 3).map((n: any) => n.target.join(' ')),
    }));
  });
  return violations
    .filter((v: any) => v.impact === 'serious' || v.impact === 'critical')
    .map((v: any) => `${v.id} (${v.impact}): ${v.nodes.join(', ')}`);
}

let browser: Browser | null = null;
// Registered as the file imports this module, so on the file's root: the browser outlives each test.
after(() => browser?.close());

/**
 * A new page in a fresh context of the file's Chromium (launched on first use, closed when the
 * file's tests end), with the script errors it meets; the context closes when the test ends.
 */
export async function newBrowserPage(t: TestContext): Promise<{ page: Page; errors: string[] }> {
  if (!browser) {
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run', '--disable-sync'],
    });
  }
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  t.after(() => context.close());
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  return { page, errors };
}
