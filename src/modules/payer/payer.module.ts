import type { ModuleManifest } from '../manifest.ts';
import { registerPayerRoutes } from './payer.routes.ts';

/** The payer dashboard at /customer. */
export const payerModule: ModuleManifest = {
  name: 'payer',
  routes: (app, deps) => registerPayerRoutes(app, deps),
};
