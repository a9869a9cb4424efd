import { Migrator, sql, type MigrationProvider } from 'kysely';
import { engineOf, type Db } from './db.ts';
import { migrations } from './migrations/index.ts';

const provider: MigrationProvider = { getMigrations: async () => migrations };

/**
 * On PostgreSQL the migration tables are pinned to the connection's current schema: left
 * unqualified, Kysely looks for them in every schema it can see, so another schema's migration
 * tables (a second Tono database, a test schema) would make it skip creating ours.
 */
async function migrationSchema(db: Db): Promise<string | undefined> {
  if (engineOf(db) !== 'postgres') return undefined;
  const { rows } = await sql<{ schema: string | null }>`select current_schema() as schema`.execute(db);
  const schema = rows[0]?.schema;
  if (!schema) throw new Error('the PostgreSQL search_path names no existing schema');
  return schema;
}

async function migratorFor(db: Db): Promise<Migrator> {
  return new Migrator({ db, provider, migrationTableSchema: await migrationSchema(db) });
}

export async function migrateToLatest(db: Db): Promise<string[]> {
  const migrator = await migratorFor(db);
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/** Names of the migrations this code has that the database has not applied (all of them when it was never migrated). */
export async function pendingMigrations(db: Db): Promise<string[]> {
  const migrator = await migratorFor(db);
  return (await migrator.getMigrations()).filter((m) => !m.executedAt).map((m) => m.name);
}

/** Whether any migration ran on this database: false for a new, empty one. */
export async function migratedBefore(db: Db): Promise<boolean> {
  const migrator = await migratorFor(db);
  return (await migrator.getMigrations()).some((m) => m.executedAt);
}

/** Migrates up (or down) to the named migration: for tests of a migration's data changes. */
export async function migrateTo(db: Db, name: string): Promise<void> {
  const migrator = await migratorFor(db);
  const { error } = await migrator.migrateTo(name);
  if (error) throw error instanceof Error ? error : new Error(String(error));
}
