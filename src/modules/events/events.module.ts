import type { ModuleManifest } from '../manifest.ts';
import { registerEventRoutes } from './events.routes.ts';

/** Events: the outbox every change writes to, and the events API. */
export const eventsModule: ModuleManifest = {
  name: 'events',
  routes: (app, deps) => registerEventRoutes(app, deps),
};
