import type { ModuleManifest } from '../manifest.ts';
import { registerMerchantRoutes } from './merchants.routes.ts';

/** Merchants, their API keys and bank accounts; API-key authentication (merchants.auth.ts). */
export const merchantsModule: ModuleManifest = {
  name: 'merchants',
  routes: (app, deps) => registerMerchantRoutes(app, deps),
};
