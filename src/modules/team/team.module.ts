import type { ModuleManifest } from '../manifest.ts';

/**
 * A merchant's team: members with roles, and invitations (docs/team.md). Its pages are the
 * dashboard's (src/modules/dashboard/sections/team.ts), which calls this module's service.
 */
export const teamModule: ModuleManifest = {
  name: 'team',
};
