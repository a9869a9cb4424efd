import type { ModuleManifest } from '../manifest.ts';
import { engineOf } from '../../store/db.ts';
import { AuditChainer } from './audit.chainer.ts';
import { registerAuditRoutes } from './audit.routes.ts';

/**
 * The audit trail: every change to a merchant's data, hash-chained per merchant (docs/audit.md).
 * It declares no test data: deleting a merchant's test data is itself recorded, and removes no record.
 */
export const auditModule: ModuleManifest = {
  name: 'audit',
  routes: (app, deps) => registerAuditRoutes(app, deps),
  runners: (deps) =>
    engineOf(deps.db) === 'postgres' ? [new AuditChainer(deps.db, deps.log.child({ component: 'audit' }))] : [],
};
