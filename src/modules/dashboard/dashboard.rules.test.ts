import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parse } from 'csv-parse/sync';
import { stringify } from 'csv-stringify/sync';
import { centsToDecimal } from '../../shared/money.ts';
import {
  columnBars,
  dayLabels,
  moneyTickLabel,
  moneyTicks,
  receivedChart,
  receivedPerDay,
  rowBars,
  statusBreakdown,
  type Activity,
} from './dashboard.charts.ts';
import { amountText, apiBodyProblem, dollarsToCents } from './dashboard.forms.ts';
import { formProblemOf, REQUEST_INPUTS, REQUEST_KINDS, requestBodyFromForm, strayInputOf } from './request-form.ts';
import { dayBound, money, queryOf } from './dashboard.format.ts';
import { failureRateText, objectPathOf, spreadsheetSafe, statusHistory } from './dashboard.present.ts';
import { CreateRequestBody } from '../requests/requests.schemas.ts';

// The dashboard's pure parts: chart geometry, daily totals, form-to-body, CSV cells.

const ZONE = 'Pacific/Auckland';

test('column bars fit the box, keep the order and proportions, and the largest fills the height', () => {
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 0, max: 10_000_000 }), { minLength: 1, maxLength: 60 }), (values) => {
      const bars = columnBars(values, 600, 160);
      assert.equal(bars.length, values.length);
      const max = Math.max(...values);
      bars.forEach((bar, i) => {
        assert.ok(bar.x >= 0 && bar.x + bar.width <= 600.01, 'inside horizontally');
        assert.ok(bar.y >= 0 && Math.abs(bar.y + bar.height - 160) < 0.02, 'standing on the baseline');
        if (max > 0) assert.ok(Math.abs(bar.height - (values[i] / max) * 160) < 0.02);
        else assert.equal(bar.height, 0);
        if (i > 0) assert.ok(bar.x > bars[i - 1].x);
      });
      if (max > 0) assert.ok(Math.abs(Math.max(...bars.map((b) => b.height)) - 160) < 0.02);
    }),
  );
  fc.assert(
    fc.property(fc.array(fc.nat(1000), { maxLength: 10 }), (values) => {
      for (const bar of rowBars(values, 360, 28)) assert.ok(bar.width >= 0 && bar.width <= 360);
    }),
  );
});

test('money received per day: every day of the window, oldest first, summing exactly the successful payments inside it', () => {
  const now = Date.parse('2026-11-23T10:00:00Z');
  const activity = fc.array(
    fc
      .record({
        status: fc.constantFrom('successful', 'failed', 'awaiting-consent'),
        cents: fc.integer({ min: 1, max: 500_000 }),
        createdAt: fc.integer({ min: now - 40 * 86_400_000, max: now }),
      })
      .map((p): Activity => ({ ...p, completedAt: p.createdAt })),
    { maxLength: 80 },
  );
  fc.assert(
    fc.property(activity, (payments) => {
      const days = receivedPerDay(payments, now, ZONE, 30);
      assert.equal(days.length, 30);
      assert.equal(days[29].date, '2026-11-23');
      for (let i = 1; i < days.length; i++) assert.ok(days[i - 1].date < days[i].date);
      const start = dayBound(days[0].date, ZONE, false)!;
      const expected = payments
        .filter((p) => p.status === 'successful' && p.createdAt >= start)
        .reduce((sum, p) => sum + p.cents, 0);
      assert.equal(
        days.reduce((sum, d) => sum + d.cents, 0),
        expected,
      );
    }),
  );
  const breakdown = statusBreakdown(
    [
      { status: 'successful', cents: 1, createdAt: 0, completedAt: 0 },
      { status: 'successful', cents: 1, createdAt: 0, completedAt: 0 },
      { status: 'failed', cents: 1, createdAt: 0, completedAt: 0 },
      { status: 'awaiting-consent', cents: 1, createdAt: 0, completedAt: 0 },
    ],
    ['awaiting-consent', 'successful', 'failed'],
  );
  assert.deepEqual(
    breakdown.counts.map((c) => c.count),
    [1, 2, 1],
  );
  assert.equal(breakdown.successRate, 2 / 3);
  assert.equal(statusBreakdown([], ['successful']).successRate, null);
});

test('amounts typed in forms become the API amount; blank fields stay out of the body; the API schema takes a full form', () => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 10_000_000 }), (cents) => {
      const decimal = centsToDecimal(cents);
      assert.equal(amountText(decimal), `${decimal} NZD`);
      assert.equal(amountText(`$${decimal}`), `${decimal} NZD`);
      assert.equal(dollarsToCents(decimal), cents);
      assert.equal(
        money(cents),
        `$${Math.floor(cents / 100).toLocaleString('en-NZ')}.${String(cents % 100).padStart(2, '0')}`,
      );
    }),
  );
  assert.equal(amountText('12.5'), '12.50 NZD');
  assert.equal(amountText('1,000'), '1000.00 NZD');
  assert.ok(Number.isNaN(dollarsToCents('ten')!));
  assert.equal(dollarsToCents(''), null);

  const blank = requestBodyFromForm(
    {
      message: 'Tea',
      bank_account_id: 'bankaccount_1',
      amount: '',
      reference: '',
      payer_email: '',
    },
    'fixed',
  );
  assert.deepEqual(blank, { bank_account_id: 'bankaccount_1', message: 'Tea' });
  fc.assert(
    fc.property(
      fc.record({
        message: fc.string({ minLength: 1, maxLength: 60 }).filter((s) => s.trim().length > 0 && s.trim() === s),
        cents: fc.integer({ min: 1, max: 500_000 }),
        reference: fc.stringMatching(/^[A-Za-z0-9-]{0,12}$/),
        flags: fc.subarray(['is_donation', 'require_customer_phone', 'allow_marketing_opt_in']),
      }),
      ({ message, cents, reference, flags }) => {
        const form: Record<string, unknown> = {
          message,
          bank_account_id: 'bankaccount_1',
          amount: centsToDecimal(cents),
          reference,
          type: 'single',
        };
        for (const flag of flags) form[flag] = 'on';
        const body = requestBodyFromForm(form, 'fixed');
        assert.equal(apiBodyProblem(CreateRequestBody, body), null, JSON.stringify(body));
        assert.equal(body.amount, `${centsToDecimal(cents)} NZD`);
        assert.equal('reference' in body, reference !== '');
        for (const flag of flags) assert.equal(body[flag], true);
      },
    ),
  );
  const subscription = requestBodyFromForm(
    {
      message: 'Beans',
      bank_account_id: 'b',
      subscription_amount: '15',
      subscription_period: 'monthly',
      payer_email: 'p@example.com',
      amount: '99',
    },
    'subscription',
  );
  assert.deepEqual(subscription.subscription_options, { amount: '15.00 NZD', period: 'monthly' });
  assert.equal(subscription.amount, undefined, 'the one-off amount is not sent with a subscription');
  assert.equal(
    apiBodyProblem(CreateRequestBody, { ...subscription, extra: 1 })!.code,
    'bad_request.unknown_param.extra',
  );
});

test('form errors name the form’s labels, never an API field name, and say how to fix it; only the chosen kind’s inputs are taken', () => {
  const apiNames =
    /\b(cust_info|recurring_options|subscription_options|max_per_period|minimum_payment_amount|start_date)\b/;
  for (const [field, message] of [
    ['cust_info.email', 'cust_info.email is required'],
    ['recurring_options.max_per_payment', 'recurring_options.max_per_payment must not be more than max_per_period'],
    ['subscription_options.end_date', 'subscription_options.end_date must not be before start_date'],
    ['reference', 'reference must be text matching ^[a-zA-Z0-9-]{0,12}$'],
    ['minimum_payment_amount', 'minimum_payment_amount must be an integer'],
    ['message', 'message must be at least 1 character'],
  ] as const) {
    const problem = formProblemOf({ field, message });
    assert.ok(REQUEST_INPUTS[problem.input], `${field} points at an input of the form`);
    assert.ok(!apiNames.test(problem.message), problem.message);
    assert.ok(problem.message.includes(`“${REQUEST_INPUTS[problem.input].label}”`), problem.message);
    assert.ok(problem.message.endsWith(REQUEST_INPUTS[problem.input].fix), problem.message);
  }
  assert.equal(
    formProblemOf({
      field: 'recurring_options.max_per_payment',
      message: 'recurring_options.max_per_payment must not be more than max_per_period',
    }).message.split('. ')[0],
    '“Most a payment (NZD)” must not be more than “Most each period (NZD)”',
  );
  const kinds = Object.keys(REQUEST_KINDS) as Array<keyof typeof REQUEST_KINDS>;
  fc.assert(
    fc.property(fc.constantFrom(...kinds), fc.constantFrom(...kinds), (chosen, other) => {
      const input = REQUEST_KINDS[other].inputs.at(-1)!;
      const stray = strayInputOf({ message: 'Tea', [input]: '12' }, chosen);
      assert.equal(stray === null, REQUEST_KINDS[chosen].inputs.includes(input), `${input} with ${chosen}`);
      for (const own of REQUEST_KINDS[chosen].inputs) assert.equal(strayInputOf({ [own]: '1' }, chosen), null);
    }),
  );
});

test('CSV cells a spreadsheet would run are written as text, and every value survives a round trip', () => {
  fc.assert(
    fc.property(fc.array(fc.string({ maxLength: 30 }), { minLength: 1, maxLength: 8 }), (cells) => {
      const safe = cells.map(spreadsheetSafe);
      for (const cell of safe) assert.ok(!/^[=+\-@\t\r]/.test(cell));
      const back = parse(stringify([safe]), { relax_column_count: true })[0] ?? [''];
      assert.deepEqual(back, safe.length === 1 && safe[0] === '' ? [''] : safe);
    }),
  );
});

test('a day range covers whole local days; queries keep only filled values; status history is in time order', () => {
  const start = dayBound('2026-04-05', ZONE, false)!;
  const end = dayBound('2026-04-05', ZONE, true)!;
  assert.equal(end - start, 25 * 3_600_000, 'the day the clocks go back is 25 hours long');
  assert.equal(dayBound('2026-02-30', ZONE, false), null);
  assert.equal(dayBound('yesterday', ZONE, false), null);
  assert.equal(queryOf({ q: 'a b', status: '', after: undefined }), '?q=a+b');
  assert.equal(queryOf({}), '');
  const history = statusHistory([
    {
      id: 'event_2',
      type: 'payment.status_updated',
      created_at: '2026-01-01T00:00:02.000Z',
      data: { status: 'successful' },
    } as any,
    {
      id: 'event_1',
      type: 'payment.created',
      created_at: '2026-01-01T00:00:01.000Z',
      data: { status: 'awaiting-consent' },
    } as any,
    { id: 'event_3', type: 'request.created', created_at: '2026-01-01T00:00:00.000Z', data: {} } as any,
  ]);
  assert.deepEqual(
    history.map((h) => h.status),
    ['awaiting-consent', 'successful'],
  );
});

test('the money axis: round whole-dollar steps from $0 to the first at or above the largest day, a handful of them', () => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 10_000_000_000 }), fc.integer({ min: 2, max: 8 }), (max, most) => {
      const { top, ticks } = moneyTicks(max, most);
      assert.equal(ticks[0], 0);
      assert.equal(ticks[ticks.length - 1], top);
      assert.ok(top >= max && top >= 100, 'covers the largest, and at least $1');
      assert.ok(ticks.length >= 2 && ticks.length <= most, `${ticks.length} ticks`);
      const step = ticks[1];
      assert.ok(top - step < Math.max(max, 1), 'no empty step above the largest');
      assert.match(String(step / 100), /^[125]0*$/, 'a step of 1, 2 or 5 whole dollars times a power of ten');
      assert.deepEqual(
        ticks,
        ticks.map((_, i) => i * step),
      );
    }),
  );
  assert.deepEqual(moneyTicks(3400).ticks, [0, 1000, 2000, 3000, 4000]);
  assert.deepEqual(moneyTicks(0).ticks, [0, 100]);
  assert.deepEqual([0, 50_000, 200_000, 1_500_000, 250_000_000].map(moneyTickLabel), [
    '$0',
    '$500',
    '$2,000',
    '$15k',
    '$2.5m',
  ]);
});

test('the received chart: bars inside the plot under the top tick, ticks from the baseline up, dates under their bars', () => {
  const box = { width: 600, height: 240, left: 72, right: 8, top: 12, bottom: 30 };
  const now = Date.parse('2026-11-23T10:00:00Z');
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 0, max: 5_000_000 }), { minLength: 30, maxLength: 30 }), (cents) => {
      const days = receivedPerDay([], now, ZONE, 30).map((d, i) => ({ ...d, cents: cents[i] }));
      const chart = receivedChart(days, box);
      assert.equal(chart.baseline, 210);
      for (const bar of chart.bars) {
        assert.ok(bar.x >= box.left && bar.x + bar.width <= box.width - box.right + 0.01, 'inside horizontally');
        assert.ok(bar.y >= box.top - 0.01 && Math.abs(bar.y + bar.height - chart.baseline) < 0.02, 'on the baseline');
      }
      assert.equal(chart.yTicks[0].y, chart.baseline);
      assert.equal(chart.yTicks[chart.yTicks.length - 1].y, box.top);
      for (const label of chart.xLabels) assert.ok(label.x > box.left && label.x < box.width - box.right);
    }),
  );
  const days = receivedPerDay([], now, ZONE, 30);
  assert.deepEqual(
    dayLabels(days).map((l) => [l.index, l.label]),
    [
      [1, '26 Oct'],
      [8, '2 Nov'],
      [15, '9 Nov'],
      [22, '16 Nov'],
      [29, '23 Nov'],
    ],
  );
});

test('an event links to the page of what it is about; failure rates read as counts and a share', () => {
  const ulid = '01JD2Q8Z7M3V4K5N6P7R8S9T0V';
  assert.deepEqual(
    ['request', 'payment', 'customer', 'subscription', 'recurring', 'webhook', 'charge', 'event'].map((kind) =>
      objectPathOf(`${kind}_${ulid}`),
    ),
    [
      `requests/request_${ulid}`,
      `payments/payment_${ulid}`,
      `customers/customer_${ulid}`,
      `subscriptions/subscription_${ulid}`,
      `recurring-consents/recurring_${ulid}`,
      `webhooks/webhook_${ulid}`,
      null,
      null,
    ],
  );
  for (const odd of [undefined, 42, 'payment_', `payment_${ulid}/../x`, `javascript:payment_${ulid}`])
    assert.equal(objectPathOf(odd), null, String(odd));
  assert.deepEqual(
    [
      [0, 0],
      [0, 12],
      [3, 12],
      [1, 1000],
      [12, 12],
      [1, 1],
    ].map(([failed, attempts]) => failureRateText(failed, attempts)),
    [
      'no attempts',
      'none of 12 attempts failed',
      '3 of 12 attempts failed (25%)',
      '1 of 1000 attempts failed (<1%)',
      '12 of 12 attempts failed (100%)',
      '1 of 1 attempt failed (100%)',
    ],
  );
});
