import type { Kysely } from 'kysely';

// A secret the dashboard shows once (a new webhook secret, a new API key) waits in the session for
// the one page view after the redirect, sealed (src/modules/dashboard/dashboard.sessions.ts).
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('dashboard_sessions').addColumn('shown_once_sealed', 'text').execute();
}
