import type { Kysely, Selectable, Updateable } from 'kysely';
import type { Database } from '../../store/tables.ts';
import type { MailMessagesTable } from './mail.tables.ts';

type Db = Kysely<Database>;
export type MailRow = Selectable<MailMessagesTable>;

/** Inserts a message; false when one with its dedupe key exists already. */
export async function insertMessage(db: Db, row: MailRow): Promise<boolean> {
  const inserted = await db.insertInto('mail_messages').values(row).onConflict((c) => c.column('dedupe_key').doNothing()).executeTakeFirst();
  return Number(inserted.numInsertedOrUpdatedRows ?? 0) > 0;
}

export async function findMessage(db: Db, id: string): Promise<MailRow | undefined> {
  return db.selectFrom('mail_messages').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function updateMessage(db: Db, id: string, changes: Updateable<MailMessagesTable>): Promise<void> {
  await db.updateTable('mail_messages').set(changes).where('id', '=', id).execute();
}
