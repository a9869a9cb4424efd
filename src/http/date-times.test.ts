import { test } from 'node:test';
import assert from 'node:assert/strict';
import { apiClient, buildTestApp, createTestMerchant, type ApiClient } from '../../test/helpers.ts';

// Every API field that takes a date-time reads it by one rule (shared/date-time.ts,
// docs/api-conventions.md): a request's end_date, the test clock's to, a webhook recovery's since
// and the audit trail's created[gte] accept the same forms and refuse the same forms.

/** In the clock's future, each later than the one before: the test clock only moves forward. */
const ACCEPTED = [
  '2040-06-01T10:00Z',
  '2040-06-02T10:00:00Z',
  '2040-06-03T10:00:00.123456Z',
  '2040-06-04T10:00:00+14:00',
  '2040-06-05T10:00-14:00',
  '2040-06-06T10:00:00+05:45',
  '2040-06-07T10:00:00-00:00',
];

const REFUSED = [
  '2040-07-01T24:00Z',
  '2040-07-01T24:00:00+12:00',
  '2040-07-01T10:00+99:99',
  '2040-07-01T10:00+25:00',
  '2040-07-01T10:00+14:30',
  '2040-07-01T10:00+12:60',
  '2040-07-01T10:00:00+1200',
  '2040-07-01t10:00:00z',
  '2040-07-01T10:00:00z',
  '2040-07-01 10:00:00Z',
  '2040-07-01T10:00:00',
  '2040-07-01T23:59:60Z',
  '2040-02-30T10:00:00Z',
];

type Field = { field: string; send: (api: ApiClient, value: string) => ReturnType<ApiClient['get']> };

async function endpoints(api: ApiClient, bankAccountId: string): Promise<Field[]> {
  const hook = await api.post('/v1/webhooks', { url: 'https://example.com/hook' });
  assert.equal(hook.status, 201, hook.text);
  return [
    {
      field: 'recurring_options.end_date',
      send: (client, end_date) =>
        client.post('/v1/requests', {
          bank_account_id: bankAccountId,
          message: 'Weekly box',
          recurring_options: { period: 'weekly', max_per_period: '50.00 NZD', end_date },
          cust_info: { email: 'payer@example.com' },
        }),
    },
    { field: 'to', send: (client, to) => client.post('/v1/test-helpers/clock/advance', { to }) },
    { field: 'since', send: (client, since) => client.post(`/v1/webhooks/${hook.body.webhook.id}/recover`, { since }) },
    {
      field: 'created[gte]',
      send: (client, value) => client.get('/v1/audit-events', { query: { 'created[gte]': value } }),
    },
  ];
}

test('every date-time field accepts and refuses the same forms', async (t) => {
  const app = await buildTestApp(t);
  const merchant = await createTestMerchant(app);
  const api = apiClient(app, merchant.testKey);
  for (const { field, send } of await endpoints(api, merchant.bankAccountId)) {
    for (const value of ACCEPTED) {
      const response = await send(api, value);
      assert.ok(response.status === 200 || response.status === 201, `${field} ${value}: ${response.text}`);
    }
    for (const value of REFUSED) {
      const response = await send(api, value);
      assert.equal(response.status, 400, `${field} ${value}: ${response.text}`);
      assert.equal(response.body.code, `bad_request.invalid_param.${field}`, `${field} ${value}`);
      assert.deepEqual(response.body.params, { field }, `${field} ${value}`);
    }
  }
});

test('a date alone is taken only where the field says so: an end_date, not the clock’s to', async (t) => {
  const app = await buildTestApp(t);
  const merchant = await createTestMerchant(app);
  const api = apiClient(app, merchant.testKey);
  const [endDate, to] = await endpoints(api, merchant.bankAccountId);
  assert.equal((await endDate!.send(api, '2040-07-01')).status, 201);
  assert.equal((await to!.send(api, '2040-07-01')).body.code, 'bad_request.invalid_param.to');
});
