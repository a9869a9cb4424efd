import type { ModuleManifest } from '../manifest.ts';
import { PRUNE_JOB, pruneJob, schedulePrune } from './maintenance.service.ts';

/** Housekeeping: what has outlived its retention is pruned every hour (docs/configuration.md, "Retention"). */
export const maintenanceModule: ModuleManifest = {
  name: 'maintenance',
  jobs: [{ name: PRUNE_JOB, handler: pruneJob }],
  start: schedulePrune,
};
