import type { ModuleManifest } from '../manifest.ts';
import { countTestCustomers, deleteTestCustomers } from './customers.repo.ts';
import { registerCustomerRoutes } from './customers.routes.ts';

/** Customers: the payers a merchant knows, by email. */
export const customersModule: ModuleManifest = {
  name: 'customers',
  routes: (app, deps) => registerCustomerRoutes(app, deps),
  testData: {
    kinds: { customers: 'Customers' },
    count: async (db, userId) => ({ customers: await countTestCustomers(db, userId) }),
    delete: async (trx, userId) => ({ customers: await deleteTestCustomers(trx, userId) }),
  },
};
