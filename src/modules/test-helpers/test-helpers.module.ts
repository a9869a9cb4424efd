import type { ModuleManifest } from '../manifest.ts';
import { registerBankHookRoutes } from './bank-hooks.routes.ts';
import { registerTestClockRoutes } from './clock.routes.ts';
import { registerPayTestHelperRoutes } from './pay.routes.ts';

/** Test mode's helpers: the test clock, paying a request as a payer would, and what the sandbox bank does. */
export const testHelpersModule: ModuleManifest = {
  name: 'test-helpers',
  async routes(app, deps, contributions) {
    await registerTestClockRoutes(app, deps);
    await registerPayTestHelperRoutes(app, deps, contributions.payHelpers);
    await registerBankHookRoutes(app, deps);
  },
};
