import { test } from 'node:test';
import assert from 'node:assert/strict';
import { apiClient, buildTestApp, createTestMerchant } from '../../../test/helpers.ts';
import { assertError, footprint } from '../../../test/assertions.ts';

// Every creation rule of POST /v1/requests (docs/api-conventions.md, docs/recurring.md, docs/subscriptions.md):
// each bad input gets its exact error and leaves no request, event, job or idempotency key behind.

const AMOUNT_FORM = 'must be <decimal> NZD with two decimals, for example "10.00 NZD"';
const AMOUNT = `amount ${AMOUNT_FORM}`;
const URL_RULE = 'must be an https URL (http only for localhost)';
const URL_FORM = 'must be an https URL (http only for localhost), at most 2048 characters';
const DATE_FORM = 'must be a date YYYY-MM-DD or an ISO 8601 date-time';
const CENTS = 'must be a whole number of cents from 1 to 500000 (5000.00 NZD)';
const EXPIRES = 'expires_in must be <n>m, <n>h or <n>d, from 1 minute to 365 days';
const EMAIL = 'cust_info.email must be an email address';

type Body = Record<string, unknown>;
type Case = [
  name: string,
  change: (base: Body) => Body,
  code: string,
  message: string,
  params?: Record<string, unknown>,
];

const set = (fields: Body) => (base: Body) => ({ ...base, ...fields });
const without =
  (...names: string[]) =>
  (base: Body) =>
    Object.fromEntries(Object.entries(base).filter(([k]) => !names.includes(k)));
const invalid = (field: string) => `bad_request.invalid_param.${field}`;
const recurring =
  (options: Body, extra: Body = {}) =>
  (base: Body) => ({
    ...without('amount')(base),
    recurring_options: options,
    cust_info: { email: 'payer@example.com' },
    ...extra,
  });
const subscription =
  (options: Body, extra: Body = {}) =>
  (base: Body) => ({
    ...without('amount')(base),
    subscription_options: options,
    cust_info: { email: 'payer@example.com' },
    ...extra,
  });
const dynamic = (fields: Body) => (base: Body) => ({
  ...without('amount')(base),
  allow_dynamic_amount: true,
  ...fields,
});
const okRecurring = { period: 'weekly', max_per_period: '100.00 NZD' };
const okSubscription = { amount: '15.00 NZD', period: 'monthly' };

const cases: Case[] = [
  // amount: the exact wire form, more than 0.00, at most 5000.00
  ...[
    '10.0 NZD',
    '10 NZD',
    '10.000 NZD',
    '010.00 NZD',
    '-1.00 NZD',
    ' 10.00 NZD',
    '10.00 NZD ',
    '10.00NZD',
    '10.00 nzd',
    '10.00 USD',
    '$10.00',
    '1e3.00 NZD',
    '10,00 NZD',
    '１0.00 NZD',
    '',
    '99999999999999999999999.00 NZD',
  ].map(
    (amount): Case => [
      `amount ${JSON.stringify(amount)}`,
      set({ amount }),
      invalid('amount'),
      AMOUNT,
      { field: 'amount' },
    ],
  ),
  ['amount as a number', set({ amount: 10 }), invalid('amount'), AMOUNT, { field: 'amount' }],
  ['amount null', set({ amount: null }), invalid('amount'), AMOUNT, { field: 'amount' }],
  [
    'amount 0.00',
    set({ amount: '0.00 NZD' }),
    invalid('amount'),
    'amount must be more than 0.00 NZD',
    { field: 'amount' },
  ],
  [
    'amount over 5000.00',
    set({ amount: '5000.01 NZD' }),
    invalid('amount'),
    'amount must be at most 5000.00 NZD',
    { field: 'amount', maximum: '5000.00 NZD' },
  ],
  ['amount missing', without('amount'), 'bad_request.missing_param.amount', 'amount is required', { field: 'amount' }],
  // message 1..60
  [
    'message empty',
    set({ message: '' }),
    invalid('message'),
    'message must be at least 1 character',
    { field: 'message' },
  ],
  [
    'message 61 characters',
    set({ message: 'x'.repeat(61) }),
    invalid('message'),
    'message must be at most 60 characters',
    { field: 'message' },
  ],
  ['message not a string', set({ message: 42 }), invalid('message'), 'message must be a string', { field: 'message' }],
  [
    'message missing',
    without('message'),
    'bad_request.missing_param.message',
    'message is required',
    { field: 'message' },
  ],
  // type
  [
    'type unknown',
    set({ type: 'recurring' }),
    invalid('type'),
    'type must be one of "single", "multi"',
    { field: 'type' },
  ],
  // reference [a-zA-Z0-9-]{0,12}
  ...['with space', 'x'.repeat(13), 'under_score', 'ré', 'INV#1'].map(
    (reference): Case => [
      `reference ${JSON.stringify(reference)}`,
      set({ reference }),
      invalid('reference'),
      'reference must be up to 12 letters, digits or hyphens',
      { field: 'reference' },
    ],
  ),
  [
    'merchant_identifier too long',
    set({ merchant_identifier: 'm'.repeat(256) }),
    invalid('merchant_identifier'),
    'merchant_identifier must be at most 255 characters',
    { field: 'merchant_identifier' },
  ],
  // expires_in: <n>m|h|d, 1 minute .. 365 days
  ...['0m', '10', '10s', '1.5h', '-5m', 'm', '366d', '8761h', '525601m', '01m', '10 m'].map(
    (expires_in): Case => [
      `expires_in ${JSON.stringify(expires_in)}`,
      set({ expires_in }),
      invalid('expires_in'),
      EXPIRES,
      { field: 'expires_in' },
    ],
  ),
  // bank account
  [
    'bank_account_id missing',
    without('bank_account_id'),
    'bad_request.missing_param.bank_account_id',
    'bank_account_id is required',
    { field: 'bank_account_id' },
  ],
  [
    'bank_account_id unknown',
    set({ bank_account_id: 'bankaccount_01JD2Q8Z7M3V4K5N6P7R8S9T0V' }),
    invalid('bank_account_id'),
    'bank_account_id must be one of your bank accounts (GET /v1/bank-accounts)',
    { field: 'bank_account_id' },
  ],
  // dynamic amounts
  [
    'dynamic with a fixed amount',
    (b) => ({ ...b, allow_dynamic_amount: true }),
    invalid('amount'),
    'amount is not taken with allow_dynamic_amount: the payer chooses it',
    { field: 'amount' },
  ],
  [
    'minimum above maximum',
    dynamic({ minimum_payment_amount: 5000, maximum_payment_amount: 4999 }),
    invalid('minimum_payment_amount'),
    'minimum_payment_amount must not be more than maximum_payment_amount',
    { field: 'minimum_payment_amount', minimum_payment_amount: 5000, maximum_payment_amount: 4999 },
  ],
  [
    'maximum above 500000',
    dynamic({ maximum_payment_amount: 500001 }),
    invalid('maximum_payment_amount'),
    `maximum_payment_amount ${CENTS}`,
    { field: 'maximum_payment_amount' },
  ],
  [
    'minimum 0',
    dynamic({ minimum_payment_amount: 0 }),
    invalid('minimum_payment_amount'),
    `minimum_payment_amount ${CENTS}`,
    { field: 'minimum_payment_amount' },
  ],
  [
    'minimum not whole cents',
    dynamic({ minimum_payment_amount: 1.5 }),
    invalid('minimum_payment_amount'),
    `minimum_payment_amount ${CENTS}`,
    { field: 'minimum_payment_amount' },
  ],
  [
    'minimum as a string',
    dynamic({ minimum_payment_amount: '100' }),
    invalid('minimum_payment_amount'),
    `minimum_payment_amount ${CENTS}`,
    { field: 'minimum_payment_amount' },
  ],
  ...(['suggested_amounts', 'minimum_payment_amount', 'maximum_payment_amount'] as const).map(
    (field): Case => [
      `${field} without dynamic amounts`,
      set({ [field]: field === 'suggested_amounts' ? '10.00' : 100 }),
      invalid(field),
      `${field} is only taken with allow_dynamic_amount: true`,
      { field },
    ],
  ),
  ...['abc', '10.5', '10.00,,20.00', '0.00', '0', '10.00,-1.00', '10.00 USD', '1e3'].map(
    (suggested_amounts): Case => [
      `suggested_amounts ${JSON.stringify(suggested_amounts)}`,
      dynamic({ suggested_amounts }),
      invalid('suggested_amounts'),
      'suggested_amounts must be comma-separated amounts such as "10,20,50" or "10.00,20.00,50.00"',
      { field: 'suggested_amounts' },
    ],
  ),
  [
    'seven suggested amounts',
    dynamic({ suggested_amounts: '1.00,2.00,3.00,4.00,5.00,6.00,7.00' }),
    invalid('suggested_amounts'),
    'suggested_amounts takes at most 6 amounts',
    { field: 'suggested_amounts' },
  ],
  [
    'repeated suggested amount',
    dynamic({ suggested_amounts: '5.00,5.00 NZD' }),
    invalid('suggested_amounts'),
    'suggested_amounts must not repeat an amount',
    { field: 'suggested_amounts' },
  ],
  [
    'suggested amount below the minimum',
    dynamic({ suggested_amounts: '4.99', minimum_payment_amount: 500, maximum_payment_amount: 2000 }),
    invalid('suggested_amounts'),
    'each suggested amount must be between 5.00 NZD and 20.00 NZD',
    { field: 'suggested_amounts', minimum: 500, maximum: 2000 },
  ],
  [
    'suggested amount above 5000.00',
    dynamic({ suggested_amounts: '5000.01' }),
    invalid('suggested_amounts'),
    'each suggested amount must be between 0.01 NZD and 5000.00 NZD',
    { field: 'suggested_amounts', minimum: 1, maximum: 500000 },
  ],
  // flags
  ...[
    'is_donation',
    'add_surcharge',
    'surcharge_optional',
    'allow_dynamic_amount',
    'allow_marketing_opt_in',
    'collect_customer_phone',
    'require_customer_phone',
    'require_customer_basic_info',
    'require_customer_address',
  ].map(
    (flag): Case => [
      `${flag} not a boolean`,
      set({ [flag]: 'true' }),
      invalid(flag),
      `${flag} must be a boolean`,
      { field: flag },
    ],
  ),
  [
    'phone required but not collected',
    set({ require_customer_phone: true, collect_customer_phone: false }),
    invalid('collect_customer_phone'),
    'collect_customer_phone cannot be false when require_customer_phone is true',
    { field: 'collect_customer_phone' },
  ],
  // redirect and image URLs: https, or http on localhost
  ...(['success_redirect_url', 'failure_redirect_url', 'logo_image_url', 'banner_image_url'] as const).flatMap(
    (field): Case[] => [
      ...[
        'http://example.com/done',
        'not a url',
        'ftp://example.com/x',
        'javascript:alert(1)',
        'http://localhost.evil.com/x',
        '//example.com/x',
      ].map(
        (value): Case => [
          `${field} ${value}`,
          set({ [field]: value }),
          invalid(field),
          `${field} ${URL_RULE}`,
          { field },
        ],
      ),
      [`${field} empty`, set({ [field]: '' }), invalid(field), `${field} ${URL_FORM}`, { field }],
      [
        `${field} too long`,
        set({ [field]: `https://example.com/${'a'.repeat(2040)}` }),
        invalid(field),
        `${field} ${URL_FORM}`,
        { field },
      ],
    ],
  ),
  // recurring options
  [
    'recurring without cust_info',
    recurring(okRecurring, { cust_info: undefined }),
    'bad_request.missing_param.cust_info.email',
    'cust_info.email is required',
    { field: 'cust_info.email' },
  ],
  [
    'recurring with empty cust_info',
    recurring(okRecurring, { cust_info: {} }),
    'bad_request.missing_param.cust_info.email',
    'cust_info.email is required',
    { field: 'cust_info.email' },
  ],
  [
    'recurring with a bad email',
    recurring(okRecurring, { cust_info: { email: 'not-an-email' } }),
    invalid('cust_info.email'),
    EMAIL,
    { field: 'cust_info.email' },
  ],
  [
    'recurring with an amount',
    (b) => ({ ...recurring(okRecurring)(b), amount: '10.00 NZD' }),
    invalid('amount'),
    'amount is not taken with recurring_options, which sets the amounts',
    { field: 'amount' },
  ],
  [
    'recurring with dynamic amounts',
    recurring(okRecurring, { allow_dynamic_amount: true }),
    invalid('allow_dynamic_amount'),
    'allow_dynamic_amount is not taken with recurring_options',
    { field: 'allow_dynamic_amount' },
  ],
  [
    'recurring with type multi',
    recurring(okRecurring, { type: 'multi' }),
    invalid('type'),
    'recurring_options is only supported with type single',
    { field: 'type' },
  ],
  [
    'recurring and subscription together',
    recurring(okRecurring, { subscription_options: okSubscription }),
    invalid('subscription_options'),
    'A request takes recurring_options or subscription_options, not both',
    { field: 'subscription_options' },
  ],
  [
    'recurring without period',
    recurring({ max_per_period: '100.00 NZD' }),
    'bad_request.missing_param.recurring_options.period',
    'recurring_options.period is required',
    { field: 'recurring_options.period' },
  ],
  [
    'recurring period quarterly (a subscription period, not a limit period)',
    recurring({ ...okRecurring, period: 'quarterly' }),
    invalid('recurring_options.period'),
    'recurring_options.period must be one of "daily", "weekly", "fortnightly", "monthly", "yearly"',
    { field: 'recurring_options.period' },
  ],
  [
    'recurring without max_per_period',
    recurring({ period: 'daily' }),
    'bad_request.missing_param.recurring_options.max_per_period',
    'recurring_options.max_per_period is required',
    { field: 'recurring_options.max_per_period' },
  ],
  [
    'recurring max_per_period malformed',
    recurring({ ...okRecurring, max_per_period: '100 NZD' }),
    invalid('recurring_options.max_per_period'),
    `recurring_options.max_per_period ${AMOUNT_FORM}`,
    { field: 'recurring_options.max_per_period' },
  ],
  [
    'recurring max_per_period 0.00',
    recurring({ ...okRecurring, max_per_period: '0.00 NZD' }),
    invalid('recurring_options.max_per_period'),
    'recurring_options.max_per_period must be more than 0.00 NZD',
    { field: 'recurring_options.max_per_period' },
  ],
  [
    'recurring max_per_payment over 5000.00',
    recurring({ ...okRecurring, max_per_period: '9000.00 NZD', max_per_payment: '5000.01 NZD' }),
    invalid('recurring_options.max_per_payment'),
    'recurring_options.max_per_payment must be at most 5000.00 NZD',
    { field: 'recurring_options.max_per_payment', maximum: '5000.00 NZD' },
  ],
  [
    'recurring max_per_payment over max_per_period',
    recurring({ ...okRecurring, max_per_payment: '100.01 NZD' }),
    invalid('recurring_options.max_per_payment'),
    'recurring_options.max_per_payment must not be more than max_per_period',
    { field: 'recurring_options.max_per_payment' },
  ],
  [
    'recurring total_count 0',
    recurring({ ...okRecurring, total_count: 0 }),
    invalid('recurring_options.total_count'),
    'recurring_options.total_count must be at least 1',
    { field: 'recurring_options.total_count' },
  ],
  [
    'recurring total_amount malformed',
    recurring({ ...okRecurring, total_amount: '1,000.00 NZD' }),
    invalid('recurring_options.total_amount'),
    `recurring_options.total_amount ${AMOUNT_FORM}`,
    { field: 'recurring_options.total_amount' },
  ],
  [
    'recurring end_date in the past',
    recurring({ ...okRecurring, end_date: '2020-01-01' }),
    invalid('recurring_options.end_date'),
    'recurring_options.end_date must be in the future',
    { field: 'recurring_options.end_date' },
  ],
  [
    'recurring end_date not a real date',
    recurring({ ...okRecurring, end_date: '2031-02-30' }),
    invalid('recurring_options.end_date'),
    'recurring_options.end_date must be a real date YYYY-MM-DD or ISO 8601 date-time',
    { field: 'recurring_options.end_date' },
  ],
  [
    'recurring end_date not a date',
    recurring({ ...okRecurring, end_date: 'next week' }),
    invalid('recurring_options.end_date'),
    `recurring_options.end_date ${DATE_FORM}`,
    { field: 'recurring_options.end_date' },
  ],
  // a date-time: hours 00 to 23, an offset within ±14:00, an uppercase T and Z (docs/api-conventions.md)
  ...[
    '2031-06-01T24:00Z',
    '2031-06-01T10:00+99:99',
    '2031-06-01T10:00+25:00',
    '2031-06-01T10:00+14:30',
    '2031-06-01T10:00-12:60',
    '2031-06-01t10:00:00z',
    '2031-06-01 10:00:00Z',
    '2031-06-01T10:00:00',
  ].map(
    (end_date): Case => [
      `recurring end_date ${end_date}`,
      recurring({ ...okRecurring, end_date }),
      invalid('recurring_options.end_date'),
      `recurring_options.end_date ${DATE_FORM}`,
      { field: 'recurring_options.end_date' },
    ],
  ),
  [
    'recurring end_date date-time on no real day',
    recurring({ ...okRecurring, end_date: '2031-02-29T10:00:00+13:00' }),
    invalid('recurring_options.end_date'),
    'recurring_options.end_date must be a real date YYYY-MM-DD or ISO 8601 date-time',
    { field: 'recurring_options.end_date' },
  ],
  [
    'recurring unknown option',
    recurring({ ...okRecurring, max_per_day: '1.00 NZD' }),
    'bad_request.unknown_param.recurring_options.max_per_day',
    'recurring_options.max_per_day is not a parameter of this endpoint',
    { field: 'recurring_options.max_per_day' },
  ],
  // subscription options
  [
    'subscription without cust_info',
    subscription(okSubscription, { cust_info: undefined }),
    'bad_request.missing_param.cust_info.email',
    'cust_info.email is required',
    { field: 'cust_info.email' },
  ],
  [
    'subscription with a bad email',
    subscription(okSubscription, { cust_info: { email: 'a@' } }),
    invalid('cust_info.email'),
    EMAIL,
    { field: 'cust_info.email' },
  ],
  [
    'subscription with an amount',
    (b) => ({ ...subscription(okSubscription)(b), amount: '10.00 NZD' }),
    invalid('amount'),
    'amount is not taken with subscription_options, which sets the amounts',
    { field: 'amount' },
  ],
  [
    'subscription with type multi',
    subscription(okSubscription, { type: 'multi' }),
    invalid('type'),
    'subscription_options is only supported with type single',
    { field: 'type' },
  ],
  [
    'subscription without amount',
    subscription({ period: 'weekly' }),
    'bad_request.missing_param.subscription_options.amount',
    'subscription_options.amount is required',
    { field: 'subscription_options.amount' },
  ],
  [
    'subscription amount over 5000.00',
    subscription({ ...okSubscription, amount: '5000.01 NZD' }),
    invalid('subscription_options.amount'),
    'subscription_options.amount must be at most 5000.00 NZD',
    { field: 'subscription_options.amount', maximum: '5000.00 NZD' },
  ],
  [
    'subscription amount malformed',
    subscription({ ...okSubscription, amount: '15 NZD' }),
    invalid('subscription_options.amount'),
    `subscription_options.${AMOUNT}`,
    { field: 'subscription_options.amount' },
  ],
  [
    'subscription period daily',
    subscription({ ...okSubscription, period: 'daily' }),
    invalid('subscription_options.period'),
    'subscription_options.period must be one of "weekly", "fortnightly", "monthly", "quarterly", "annually"',
    { field: 'subscription_options.period' },
  ],
  [
    'subscription start_date at 24:00',
    subscription({ ...okSubscription, start_date: '2031-06-01T24:00:00+12:00' }),
    invalid('subscription_options.start_date'),
    `subscription_options.start_date ${DATE_FORM}`,
    { field: 'subscription_options.start_date' },
  ],
  [
    'subscription start_date not real',
    subscription({ ...okSubscription, start_date: '2031-02-29' }),
    invalid('subscription_options.start_date'),
    'subscription_options.start_date must be a real date YYYY-MM-DD or ISO 8601 date-time',
    { field: 'subscription_options.start_date' },
  ],
  [
    'subscription end_date in the past',
    subscription({ ...okSubscription, end_date: '2020-06-01T00:00:00Z' }),
    invalid('subscription_options.end_date'),
    'subscription_options.end_date must be in the future',
    { field: 'subscription_options.end_date' },
  ],
  [
    'subscription end before start',
    subscription({ ...okSubscription, start_date: '2031-06-01', end_date: '2031-05-01' }),
    invalid('subscription_options.end_date'),
    'subscription_options.end_date must not be before start_date',
    { field: 'subscription_options.end_date' },
  ],
  [
    'subscription total_count 0',
    subscription({ ...okSubscription, total_count: 0 }),
    invalid('subscription_options.total_count'),
    'subscription_options.total_count must be at least 1',
    { field: 'subscription_options.total_count' },
  ],
  [
    'subscription options not an object',
    set({ subscription_options: 'monthly' }),
    invalid('subscription_options'),
    'subscription_options must be an object',
    { field: 'subscription_options' },
  ],
  // cust_info on any request
  [
    'cust_info unknown field',
    set({ cust_info: { email: 'a@example.com', nickname: 'x' } }),
    'bad_request.unknown_param.cust_info.nickname',
    'cust_info.nickname is not a parameter of this endpoint',
    { field: 'cust_info.nickname' },
  ],
  [
    'cust_info bad phone',
    set({ cust_info: { email: 'a@example.com', phone: 'call me' } }),
    invalid('cust_info.phone'),
    'cust_info.phone must be a phone number of digits, spaces, ()- and an optional leading +',
    { field: 'cust_info.phone' },
  ],
  // NUL characters (PostgreSQL text cannot hold them): refused everywhere, naming the field
  [
    'NUL in message',
    set({ message: 'Cof\u0000fee' }),
    invalid('message'),
    'message must not contain NUL (\\u0000) characters',
    { field: 'message' },
  ],
  [
    'NUL in a nested field',
    set({ cust_info: { email: 'a@example.com', first_name: '\u0000' } }),
    invalid('cust_info.first_name'),
    'cust_info.first_name must not contain NUL (\\u0000) characters',
    { field: 'cust_info.first_name' },
  ],
  // unknown fields, top level and nested
  [
    'unknown field',
    set({ currency: 'NZD' }),
    'bad_request.unknown_param.currency',
    'currency is not a parameter of this endpoint',
    { field: 'currency' },
  ],
  [
    'minimum_payment_amount misspelt as the response name',
    dynamic({ min_payment_amount: 100 }),
    'bad_request.unknown_param.min_payment_amount',
    'min_payment_amount is not a parameter of this endpoint',
    { field: 'min_payment_amount' },
  ],
];

test('POST /v1/requests refuses every invalid body with its exact error and changes nothing', async (t) => {
  const app = await buildTestApp(t);
  const merchant = await createTestMerchant(app);
  const other = await createTestMerchant(app);
  const api = apiClient(app, merchant.testKey);
  const base: Body = { bank_account_id: merchant.bankAccountId, amount: '10.00 NZD', message: 'Coffee' };

  for (const [name, change, code, message, params = {}] of cases) {
    await t.test(name, async () => {
      const body = JSON.parse(JSON.stringify(change(base)));
      const response = await api.post('/v1/requests', body, { headers: { 'idempotency-key': `k-${name}` } });
      assertError(response, 400, code, message, params);
    });
  }

  await t.test("another merchant's bank account", async () => {
    assertError(
      await api.post('/v1/requests', { ...base, bank_account_id: other.bankAccountId }),
      400,
      invalid('bank_account_id'),
      'bank_account_id must be one of your bank accounts (GET /v1/bank-accounts)',
      { field: 'bank_account_id' },
    );
  });

  await t.test('bodies that are not a JSON object', async () => {
    for (const text of ['{"message":', 'not json', "{'a':1}", '{"a":1,}']) {
      assertError(await api.post('/v1/requests', text), 400, 'bad_request.invalid_json', 'The body is not valid JSON');
    }
    for (const text of ['null', '[]', '"text"', '42', 'true']) {
      assertError(
        await api.post('/v1/requests', text),
        400,
        'bad_request.invalid_json',
        'The body must be a JSON object',
      );
    }
    const empty = await app.app.inject({
      method: 'POST',
      url: '/v1/requests',
      headers: { authorization: `Bearer ${merchant.testKey}`, 'content-type': 'application/json' },
      payload: '',
    });
    assertError(
      { status: empty.statusCode, body: empty.json(), text: empty.body },
      400,
      'bad_request.invalid_json',
      'The body is not valid JSON',
    );
    const none = await app.app.inject({
      method: 'POST',
      url: '/v1/requests',
      headers: { authorization: `Bearer ${merchant.testKey}` },
    });
    assertError(
      { status: none.statusCode, body: none.json(), text: none.body },
      400,
      'bad_request.invalid_json',
      'The body must be a JSON object',
    );
  });

  await t.test('a body over 100 kB', async () => {
    const response = await api.post('/v1/requests', { ...base, merchant_identifier: 'x'.repeat(102_400) });
    assertError(response, 413, 'payload_too_large', 'The body is larger than 100 kB', { limit_bytes: 102_400 });
  });

  await t.test('a body that is not JSON by content type', async () => {
    for (const type of [
      'text/plain',
      'application/x-www-form-urlencoded',
      'application/xml',
      'multipart/form-data; boundary=x',
    ]) {
      const response = await api.post('/v1/requests', 'message=hi', { headers: { 'content-type': type } });
      assertError(response, 415, 'unsupported_media_type', 'Send the body as JSON with Content-Type: application/json');
    }
    const charset = await api.post('/v1/requests', base, {
      headers: { 'content-type': 'application/json; charset=utf-8' },
    });
    assert.equal(charset.status, 201, charset.text);
  });

  await t.test('nothing was written by any refused request', async () => {
    const nothing = { requests: 0, events: 0, deliveries: 0, audited_creates: 0, idempotency_keys: 0, expiry_jobs: 0 };
    assert.deepEqual(await footprint(app.deps.db, other.userId), nothing);
    const mine = await footprint(app.deps.db, merchant.userId);
    assert.deepEqual(mine, { ...nothing, requests: 1, events: 1, audited_creates: 1 }); // the one charset request above
  });
});

// The bank account is checked by the request's insert, with the rest of the create in flight in its
// transaction (docs/performance.md, "What a call costs on PostgreSQL"): a refusal there must take
// all of it back.
test("a create into another merchant's bank account, with an endpoint, an expiry and a key, writes nothing", async (t) => {
  const app = await buildTestApp(t);
  const merchant = await createTestMerchant(app);
  const other = await createTestMerchant(app);
  const api = apiClient(app, merchant.testKey);
  const hook = await api.post('/v1/webhooks', { url: 'https://hooks.example.com/all' });
  assert.equal(hook.status, 201, hook.text);
  const body: Body = { bank_account_id: other.bankAccountId, amount: '10.00 NZD', message: 'Tea', expires_in: '1h' };
  const headers = { 'idempotency-key': 'refused-then-fixed' };

  for (let i = 0; i < 2; i++)
    assertError(
      await api.post('/v1/requests', body, { headers }),
      400,
      invalid('bank_account_id'),
      'bank_account_id must be one of your bank accounts (GET /v1/bank-accounts)',
      { field: 'bank_account_id' },
    );
  const nothing = { requests: 0, events: 0, deliveries: 0, audited_creates: 0, idempotency_keys: 0, expiry_jobs: 0 };
  assert.deepEqual(await footprint(app.deps.db, merchant.userId), nothing);
  assert.deepEqual(await footprint(app.deps.db, other.userId), nothing);

  // The key was not used up by the refusal: with the merchant's own account it makes the request.
  const made = await api.post('/v1/requests', { ...body, bank_account_id: merchant.bankAccountId }, { headers });
  assert.equal(made.status, 201, made.text);
  assert.equal(made.body.request.bank_account_id, merchant.bankAccountId);
  assert.deepEqual(await footprint(app.deps.db, merchant.userId), {
    requests: 1,
    events: 1,
    deliveries: 1,
    audited_creates: 1,
    idempotency_keys: 1,
    expiry_jobs: 1,
  });
});

test('POST /v1/requests accepts the boundary values', async (t) => {
  const app = await buildTestApp(t);
  const merchant = await createTestMerchant(app);
  const api = apiClient(app, merchant.testKey);
  const base: Body = { bank_account_id: merchant.bankAccountId, amount: '10.00 NZD', message: 'Coffee' };
  const accepted: Array<[string, Body]> = [
    ['amount 0.01', { ...base, amount: '0.01 NZD' }],
    ['amount 5000.00', { ...base, amount: '5000.00 NZD' }],
    ['message of 60 characters', { ...base, message: 'm'.repeat(60) }],
    ['message with emoji and accents', { ...base, message: 'Kia ora — café ☕' }],
    ['empty reference', { ...base, reference: '' }],
    ['reference of 12', { ...base, reference: 'INV-2026-001' }],
    ['expires_in 1m', { ...base, expires_in: '1m' }],
    ['expires_in 365d', { ...base, expires_in: '365d' }],
    ['expires_in 8760h', { ...base, expires_in: '8760h' }],
    ['expires_in 525600m', { ...base, expires_in: '525600m' }],
    ['type multi', { ...base, type: 'multi' }],
    [
      'http on localhost',
      {
        ...base,
        success_redirect_url: 'http://localhost:8080/ok',
        failure_redirect_url: 'http://127.0.0.1/fail',
        logo_image_url: 'http://[::1]/logo.png',
      },
    ],
    ['dynamic without bounds', { ...without('amount')(base), allow_dynamic_amount: true }],
    [
      'dynamic min = max = 500000',
      {
        ...without('amount')(base),
        allow_dynamic_amount: true,
        minimum_payment_amount: 500000,
        maximum_payment_amount: 500000,
      },
    ],
    [
      'recurring with every option',
      recurring({
        period: 'monthly',
        max_per_period: '500.00 NZD',
        max_per_payment: '500.00 NZD',
        total_count: 12,
        total_amount: '6000.00 NZD',
        end_date: '2040-12-31',
      })(base),
    ],
    [
      'subscription with every option',
      subscription({
        amount: '15.00 NZD',
        period: 'fortnightly',
        start_date: '2040-01-15',
        end_date: '2041-01-15T10:00:00+13:00',
        total_count: 26,
      })(base),
    ],
    ...['2040-06-01T10:00Z', '2040-06-01T10:00:00.123456789+14:00', '2040-06-01T10:00-14:00'].map(
      (end_date): [string, Body] => [`end_date ${end_date}`, recurring({ ...okRecurring, end_date })(base)],
    ),
  ];
  for (const [name, body] of accepted) {
    await t.test(name, async () => {
      const response = await api.post('/v1/requests', body);
      assert.equal(response.status, 201, response.text);
    });
  }
});
