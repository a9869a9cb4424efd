import type { ModuleManifest } from '../manifest.ts';
import { countTestRows, deleteTestRows, holdTestRows } from './reconciliation.repo.ts';
import { registerReconciliationRoutes } from './reconciliation.routes.ts';

/** Reconciliation: bank statements imported, their lines matched to payments and refunds (docs/reconciliation.md). */
export const reconciliationModule: ModuleManifest = {
  name: 'reconciliation',
  routes: (app, deps) => registerReconciliationRoutes(app, deps),
  testData: {
    kinds: { statements: 'Bank statements' },
    count: async (db, userId) => ({ statements: await countTestRows(db, userId) }),
    hold: holdTestRows,
    delete: async (trx, userId) => ({ statements: await deleteTestRows(trx, userId) }),
  },
};
