import { Type } from 'typebox';
import { apiKeyAuth, keyScope } from '../merchants/merchants.auth.ts';
import { errorResponses } from '../../http/schemas.ts';
import type { Deps } from '../context.ts';
import type { App } from '../../http/app-type.ts';
import { testKeysOnly } from './clock.service.ts';
import { countTestData, deleteTestData, testDataKinds, type TestDataParts } from './test-data.service.ts';

/** One integer per kind of test data, from the kinds the modules declare. */
function countsSchema(parts: TestDataParts) {
  const kinds = testDataKinds(parts);
  return Type.Object(
    Object.fromEntries(kinds.map(({ name, label }) => [name, Type.Integer({ minimum: 0, description: label })])),
    {
      title: 'TestDataCounts',
      description: "How many of each kind of the merchant's test-mode data",
      required: kinds.map(({ name }) => name),
    },
  );
}

export async function registerTestDataRoutes(app: App, deps: Deps, parts: TestDataParts): Promise<void> {
  const tags = ['Test helpers'];
  const Counts = countsSchema(parts);
  const kept =
    'API keys, webhook endpoints, bank accounts and the test clock are settings and are kept; live mode is never touched.';

  app.get(
    '/v1/test-helpers/data',
    {
      onRequest: [apiKeyAuth(deps), testKeysOnly],
      config: { keyScope: keyScope('all') },
      schema: {
        tags,
        summary: 'How much test data the merchant has: what DELETE /v1/test-helpers/data would delete now',
        description: kept,
        response: { 200: Type.Object({ test_data: Counts }), ...errorResponses },
      },
    },
    async (request) => ({ test_data: await countTestData(request.ctx, parts) }),
  );

  app.delete(
    '/v1/test-helpers/data',
    {
      onRequest: [apiKeyAuth(deps), testKeysOnly],
      config: { keyScope: keyScope('all') },
      schema: {
        tags,
        summary: "Delete all of the merchant's test-mode data, at once and with no event",
        description:
          'Deletes every test-mode request, payment, customer, recurring consent, subscription, event, webhook delivery, ' +
          'email record, job scheduled on the test clock and reply kept for an Idempotency-Key, in one transaction ' +
          `(all or nothing). No event is written and no webhook sent. ${kept} Answers how many of each were deleted.`,
        response: { 200: Type.Object({ deleted: Counts }), ...errorResponses },
      },
    },
    async (request) => ({ deleted: await deleteTestData(request.ctx, parts) }),
  );
}
