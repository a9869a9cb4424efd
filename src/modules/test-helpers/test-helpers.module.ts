import type { ModuleManifest } from '../manifest.ts';
import { registerBankHookRoutes } from './bank-hooks.routes.ts';
import { registerTestClockRoutes } from './clock.routes.ts';
import { registerPayTestHelperRoutes } from './pay.routes.ts';
import { registerTestDataRoutes } from './test-data.routes.ts';
import { clockAndKeysTestData } from './test-data.service.ts';

/**
 * Test mode's helpers: the test clock, paying a request as a payer would, what the sandbox bank
 * does, and deleting the merchant's test data (each module's part, declared in its manifest).
 */
export const testHelpersModule: ModuleManifest = {
  name: 'test-helpers',
  async routes(app, deps, contributions) {
    await registerTestClockRoutes(app, deps);
    await registerPayTestHelperRoutes(app, deps, contributions.payHelpers);
    await registerBankHookRoutes(app, deps);
    await registerTestDataRoutes(app, deps, contributions.testData);
  },
  testData: clockAndKeysTestData,
};
