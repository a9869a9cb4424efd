import { AppError } from '../../../shared/errors.ts';
import { iso } from '../../../shared/time.ts';
import { localAt } from '../../../shared/zone.ts';
import { advanceClock, MAX_AHEAD_SECONDS, resetClock } from '../../test-helpers/clock.service.ts';
import {
  countTestData,
  deleteTestData,
  testDataKinds,
  type TestDataParts,
} from '../../test-helpers/test-data.service.ts';
import { listEventsFor } from '../../events/events.service.ts';
import { testClockOffsetOf } from '../../merchants/merchants.service.ts';
import { formOf, problemOf, type Kit, type Scope, type Signed } from '../dashboard.kit.ts';
import { text, when } from '../dashboard.format.ts';

// The test clock (test mode only): show it, advance it by a period or to a date, and show what ran
// on the way (the events sent while it moved); reset it to now; delete all test data, after a page
// that says what goes and what stays. The move forms carry the clock as the page showed it, and a
// move by a period goes from that time: the same form posted twice (a double click) moves it once.

const hidden = { schema: { hide: true } };
export const CLOCK_STEPS: Array<[string, string, number]> = [
  ['hour', '1 hour', 3_600],
  ['day', '1 day', 86_400],
  ['week', '1 week', 7 * 86_400],
  ['fortnight', '2 weeks', 14 * 86_400],
  ['month', '30 days', 30 * 86_400],
  ['quarter', '90 days', 90 * 86_400],
  ['year', '365 days', 365 * 86_400],
];

/** What the clock page says after a reset or a deletion (`done`, and `count` for a deletion). */
function flashOf(done: string, count: string): string | null {
  if (done === 'reset')
    return 'The test clock is back at real time. Work scheduled on it keeps its time on the clock, and runs when the clock gets there again.';
  if (done === 'deleted') {
    const records = /^\d{1,12}$/.test(count) ? ` (${count} ${count === '1' ? 'record' : 'records'})` : '';
    return `Your test data is deleted${records}. Your API keys, webhook endpoints and bank accounts are as they were.`;
  }
  return null;
}

/** The merchant's test clock now, and how far ahead of real time it is (both in milliseconds). */
async function clockAsItIs(signed: Signed): Promise<{ now: number; offset: number }> {
  const offset = await testClockOffsetOf(signed.ctx.db, signed.ctx.merchant.id);
  return { now: signed.ctx.deps.clock.now() + offset, offset };
}

/** A whole number of milliseconds a form posted, or null. */
function integerOf(posted: unknown): number | null {
  const value = Number(text(posted, 20));
  return text(posted, 20) !== '' && Number.isSafeInteger(value) ? value : null;
}

type ClockPage = ReturnType<typeof clockPage>;

/** The clock page: the clock as it is (which its move forms post back), and what ran since `from`. */
function clockPage(kit: Kit) {
  return async (signed: Signed, from: number | null, error: string | null, status = 200) => {
    const shown = await clockAsItIs(signed);
    const clock = { now: iso(shown.now), offset_seconds: Math.round(shown.offset / 1000) };
    let ran: unknown[] = [];
    if (from !== null) {
      const events = await listEventsFor(signed.ctx, { limit: 200 });
      ran = events.events.filter((e) => Date.parse(e.created_at) >= from).reverse();
    }
    const local = (at: string) => localAt(at, kit.zone()).toFormat("yyyy-LL-dd'T'HH:mm");
    const latest = iso(signed.ctx.deps.clock.now() + MAX_AHEAD_SECONDS * 1000);
    return {
      status,
      data: {
        title: 'Test clock',
        ...kit.layoutOf(signed, 'clock'),
        clock,
        // Posted back by the move forms: the clock as this page shows it.
        shown,
        steps: CLOCK_STEPS,
        ran,
        from,
        error,
        zoneNow: local(clock.now),
        zoneMax: local(latest),
      },
    };
  };
}

export function registerClockPages(scope: Scope, kit: Kit, testData: TestDataParts): void {
  const page = clockPage(kit);
  scope.get(
    '/dashboard/:mode/clock',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const from = Number(text(request.query.from, 20));
        const shown = await page(signed, Number.isSafeInteger(from) && from > 0 ? from : null, null);
        const flash = flashOf(text(request.query.done, 20), text(request.query.count, 20));
        return kit.render(reply, shown.status, 'clock', { ...shown.data, flash });
      },
      { permission: 'read', testOnly: true },
    ),
  );

  registerClockMove(scope, kit, page);
  registerStartAgain(scope, kit, testData);
}

/**
 * The API's refusal of a move as the clock page says it. The API names its fields (to, seconds);
 * here they are buttons and a date field, so the page says it in the merchant's words, with times
 * in their zone.
 */
function refusalInWords(error: unknown, apiMessage: string, zone: string): string {
  const params = error instanceof AppError ? error.params : {};
  if (typeof params.maximum === 'string')
    return `The test clock can be at most 20 years ahead of real time, so it can move to ${when(params.maximum, zone)} at the latest.`;
  // A time the clock has passed: the refusal carries the clock's time, and nothing else.
  if (typeof params.now === 'string')
    return `Choose a time after ${when(params.now, zone)}, the time on the test clock now: it only moves forward.`;
  if (/^to must be an ISO 8601 date-time$/.test(apiMessage)) return 'Enter the date and time to move the clock to.';
  return apiMessage;
}

/** Moving the clock by a period from the time its page showed, or to a date and time. */
function registerClockMove(scope: Scope, kit: Kit, page: ClockPage): void {
  scope.post(
    '/dashboard/:mode/clock',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const form = formOf(request);
        const { now: before, offset } = await clockAsItIs(signed);
        const step = CLOCK_STEPS.find(([name]) => name === text(form.step));
        const to = text(form.to, 20);
        // The clock as the page showed it. Moved since means another move came first: this form's
        // own first post, when it was sent twice; the period then counts from the time the page
        // showed, so the repeat finds the clock there already. Otherwise a period counts from now,
        // as its label says (two posts at once then land a moment apart, not a period apart).
        const shownAt = integerOf(form.clock_at);
        const shownOffset = integerOf(form.clock_offset);
        const movedSince = shownOffset !== null && offset !== shownOffset;
        const local = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/.test(to) ? localAt(to, kit.zone()) : null;
        const from = movedSince && shownAt !== null ? shownAt : before;
        const target = step && !to ? from + step[2] * 1000 : local?.isValid ? local.toMillis() : null;
        const reached = () => reply.redirect(`${signed.base}/clock?from=${shownAt ?? before}`, 303);
        // Already there: the same move again (a double click, a reload) changes nothing.
        if (target !== null && target <= before && movedSince) return reached();
        try {
          if (step && !to) {
            await advanceClock(signed.ctx, { to: iso(target!) });
          } else {
            await advanceClock(signed.ctx, { to: target !== null ? iso(target) : 'not a time' });
          }
        } catch (error) {
          const problem = problemOf(error);
          if (!problem) throw error;
          // The same move posted twice at once: the other post moved the clock there first.
          if (target !== null) {
            const after = await clockAsItIs(signed);
            if (after.now >= target && after.offset !== offset) return reached();
          }
          const shown = await page(signed, null, refusalInWords(error, problem.message, kit.zone()), 400);
          return kit.render(reply, shown.status, 'clock', shown.data);
        }
        return reply.redirect(`${signed.base}/clock?from=${before}`, 303);
      },
      { permission: 'test_clock.manage', post: true, testOnly: true },
    ),
  );
}

/** Reset to now, and deleting all test data: on the clock page, in test mode only. */
function registerStartAgain(scope: Scope, kit: Kit, testData: TestDataParts): void {
  scope.post(
    '/dashboard/:mode/clock/reset',
    hidden,
    kit.guard(
      async (_request, reply, signed) => {
        await resetClock(signed.ctx);
        return reply.redirect(`${signed.base}/clock?done=reset`, 303);
      },
      { permission: 'test_clock.manage', post: true, testOnly: true },
    ),
  );

  scope.get(
    '/dashboard/:mode/clock/test-data',
    hidden,
    kit.guard(
      async (_request, reply, signed) => {
        const counts = await countTestData(signed.ctx, testData);
        const rows = testDataKinds(testData).map(({ name, label }) => ({ label, count: counts[name] ?? 0 }));
        return kit.render(reply, 200, 'test-data', {
          title: 'Delete all test data',
          ...kit.layoutOf(signed, 'clock'),
          rows,
          total: rows.reduce((sum, row) => sum + row.count, 0),
        });
      },
      { permission: 'test_clock.manage', testOnly: true },
    ),
  );

  scope.post(
    '/dashboard/:mode/clock/test-data',
    hidden,
    kit.guard(
      async (_request, reply, signed) => {
        const deleted = await deleteTestData(signed.ctx, testData);
        const count = Object.values(deleted).reduce((sum, n) => sum + n, 0);
        return reply.redirect(`${signed.base}/clock?done=deleted&count=${count}`, 303);
      },
      { permission: 'test_clock.manage', post: true, testOnly: true },
    ),
  );
}
