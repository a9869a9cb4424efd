import type { ModuleManifest } from '../manifest.ts';
import { registerRequestRoutes } from './requests.routes.ts';
import { EXPIRE_REQUEST_JOB, expireRequestJob } from './requests.service.ts';

/** Payment requests: create, list, delete, expire. */
export const requestsModule: ModuleManifest = {
  name: 'requests',
  routes: (app, deps) => registerRequestRoutes(app, deps),
  jobs: [{ name: EXPIRE_REQUEST_JOB, handler: () => expireRequestJob }],
};
