import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Browser } from '../../../test/payer.ts';
import { dashWorld, logIn, textOf, type DashMerchant } from '../../../test/dashboard.ts';

// The test clock's move forms posted twice, on SQLite and PostgreSQL: a form carries the clock as
// its page showed it; a repeat that finds the clock moved since counts its period from there, so
// "+ 30 days" clicked twice moves the clock 30 days, not 60; the same for a move to a date.

const DAY_MS = 86_400_000;

const clockOf = async (merchant: DashMerchant) =>
  Date.parse((await merchant.test.get('/v1/test-helpers/clock')).body.clock.now);

const hiddenOf = (html: string, name: string) => new RegExp(`name="${name}" value="(-?\\d+)"`).exec(html)?.[1] ?? null;

test('Move by 30 days posted twice (at once, and again after) moves the clock 30 days', async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai] = world.merchants;
  const browser = await logIn(world, kowhai);
  const page = await browser.request('/dashboard/test/clock');
  const shownAt = hiddenOf(page.text, 'clock_at');
  assert.ok(shownAt && hiddenOf(page.text, 'clock_offset') === '0', 'the form carries the clock as shown');
  const form = {
    csrf: Browser.csrfOf(page.text),
    step: 'month',
    clock_at: shownAt,
    clock_offset: hiddenOf(page.text, 'clock_offset')!,
  };
  const twice = await Promise.all([
    browser.request('/dashboard/test/clock', { form }),
    browser.request('/dashboard/test/clock', { form }),
  ]);
  const posts = [...twice, await browser.request('/dashboard/test/clock', { form })];
  assert.deepEqual(
    posts.map((p) => p.status),
    [303, 303, 303],
    posts.map((p) => textOf(p.text)).join(' | '),
  );
  const moved = (await clockOf(kowhai)) - Number(shownAt);
  assert.ok(moved >= 30 * DAY_MS && moved < 30 * DAY_MS + 60_000, `moved ${moved / DAY_MS} days`);
  const shown = await browser.request(posts[2]!.headers.get('location')!);
  assert.equal(shown.status, 200);
});

test('Move to a date posted twice moves the clock once, and the second post is no error', async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai] = world.merchants;
  const browser = await logIn(world, kowhai);
  const page = await browser.request('/dashboard/test/clock');
  const form = {
    csrf: Browser.csrfOf(page.text),
    to: '2040-01-01T09:00',
    clock_at: hiddenOf(page.text, 'clock_at')!,
    clock_offset: hiddenOf(page.text, 'clock_offset')!,
  };
  const first = await browser.request('/dashboard/test/clock', { form });
  const reached = await clockOf(kowhai);
  const second = await browser.request('/dashboard/test/clock', { form });
  assert.deepEqual([first.status, second.status], [303, 303], textOf(second.text));
  assert.ok((await clockOf(kowhai)) - reached < 60_000, 'moved once');
  // A time the clock is already past, on a page that is up to date, is still refused.
  const fresh = await browser.request('/dashboard/test/clock');
  const earlier = await browser.request('/dashboard/test/clock', {
    form: {
      ...form,
      clock_at: hiddenOf(fresh.text, 'clock_at')!,
      clock_offset: hiddenOf(fresh.text, 'clock_offset')!,
    },
  });
  assert.equal(earlier.status, 400);
  assert.match(textOf(earlier.text), /The clock did not move/);
});

test('a page left open for a while moves the clock by its period from now, as its label says', async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai] = world.merchants;
  const browser = await logIn(world, kowhai);
  const page = await browser.request('/dashboard/test/clock');
  const offset = hiddenOf(page.text, 'clock_offset')!;
  // The page as if shown two hours ago, the clock not moved since: "+ 1 hour" counts from now.
  const form = {
    csrf: Browser.csrfOf(page.text),
    step: 'hour',
    clock_at: String(Date.now() - 2 * 3_600_000),
    clock_offset: offset,
  };
  const before = await clockOf(kowhai);
  const moved = await browser.request('/dashboard/test/clock', { form });
  assert.equal(moved.status, 303, moved.text);
  const by = (await clockOf(kowhai)) - before;
  assert.ok(by >= 3_600_000 && by < 3_600_000 + 60_000, `moved an hour from now (${by} ms)`);
});
