import type { Kysely, RawBuilder } from 'kysely';

/** Makes the index `name` again over `columns`, holding only the rows `where` keeps. */
export async function rebuildPartial(
  db: Kysely<any>,
  name: string,
  table: string,
  columns: string[],
  where: RawBuilder<boolean>,
): Promise<void> {
  await db.schema.dropIndex(name).execute();
  await db.schema.createIndex(name).on(table).columns(columns).where(where).execute();
}
