import type { ModuleManifest } from '../manifest.ts';
import { countTestRequests, deleteTestRequests, holdTestRequests } from './requests.repo.ts';
import { registerRequestRoutes } from './requests.routes.ts';
import { EXPIRE_REQUEST_JOB, expireRequestJob } from './requests.service.ts';

/** Payment requests: create, list, delete, expire. */
export const requestsModule: ModuleManifest = {
  name: 'requests',
  routes: (app, deps) => registerRequestRoutes(app, deps),
  jobs: [{ name: EXPIRE_REQUEST_JOB, handler: () => expireRequestJob }],
  testData: {
    kinds: { requests: 'Payment requests' },
    count: async (db, userId) => ({ requests: await countTestRequests(db, userId) }),
    hold: holdTestRequests,
    delete: async (trx, userId) => ({ requests: await deleteTestRequests(trx, userId) }),
  },
};
