import type { ModuleManifest } from '../manifest.ts';
import { registerCustomerRoutes } from './customers.routes.ts';

/** Customers: the payers a merchant knows, by email. */
export const customersModule: ModuleManifest = {
  name: 'customers',
  routes: (app, deps) => registerCustomerRoutes(app, deps),
};
