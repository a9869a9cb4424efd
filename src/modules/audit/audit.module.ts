import type { ModuleManifest } from '../manifest.ts';
import { registerAuditRoutes } from './audit.routes.ts';

/**
 * The audit trail: every change to a merchant's data, hash-chained per merchant (docs/audit.md).
 * It declares no test data: deleting a merchant's test data is itself recorded, and removes no record.
 */
export const auditModule: ModuleManifest = {
  name: 'audit',
  routes: (app, deps) => registerAuditRoutes(app, deps),
};
