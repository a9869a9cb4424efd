import { Migrator, sql, type MigrationProvider } from 'kysely';
import { engineOf, type Db } from './db.ts';
import { migrations } from './migrations/index.ts';

const provider: MigrationProvider = { getMigrations: async () => migrations };

/**
 * On PostgreSQL the migration tables are looked up in the connection's own schema: without it
 * Kysely finds another schema's kysely_migration (a concurrent test's, say) and skips creating
 * this one's.
 */
async function migrationSchemaOf(db: Db): Promise<string | undefined> {
  if (engineOf(db) !== 'postgres') return undefined;
  const { rows } = await sql<{ schema: string }>`select current_schema() as schema`.execute(db);
  return rows[0]?.schema;
}

export async function migrateToLatest(db: Db): Promise<string[]> {
  const migrator = new Migrator({ db, provider, migrationTableSchema: await migrationSchemaOf(db) });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
