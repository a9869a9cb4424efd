import type { ModuleManifest } from '../manifest.ts';
import { registerDashboardRoutes } from './dashboard.routes.ts';

/** The merchant dashboard at /dashboard. */
export const dashboardModule: ModuleManifest = {
  name: 'dashboard',
  routes: (app, deps, contributions) => registerDashboardRoutes(app, deps, contributions),
};
