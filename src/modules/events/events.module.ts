import type { ModuleManifest } from '../manifest.ts';
import { countTestEvents, deleteTestEvents } from './events.repo.ts';
import { registerEventRoutes } from './events.routes.ts';

/** Events: the outbox every change writes to, and the events API. */
export const eventsModule: ModuleManifest = {
  name: 'events',
  routes: (app, deps) => registerEventRoutes(app, deps),
  testData: {
    kinds: { events: 'Events' },
    count: async (db, userId) => ({ events: await countTestEvents(db, userId) }),
    delete: async (trx, userId) => ({ events: await deleteTestEvents(trx, userId) }),
  },
};
