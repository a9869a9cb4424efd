import type { Kysely, Selectable } from 'kysely';
import type { Database } from '../../store/tables.ts';
import type { MailMessagesTable } from './mail.tables.ts';

type Db = Kysely<Database>;
export type MailRow = Selectable<MailMessagesTable>;

/** Inserts a message; false when one with its dedupe key exists already. */
export async function insertMessage(db: Db, row: MailRow): Promise<boolean> {
  const inserted = await db.insertInto('mail_messages').values(row).onConflict((c) => c.column('dedupe_key').doNothing()).executeTakeFirst();
  return Number(inserted.numInsertedOrUpdatedRows ?? 0) > 0;
}

export async function messagesByIds(db: Db, ids: string[]): Promise<MailRow[]> {
  if (ids.length === 0) return [];
  return db.selectFrom('mail_messages').selectAll().where('id', 'in', ids).execute();
}

/** Records one more try of each message, sent at `at`. */
export async function recordSent(db: Db, ids: string[], at: number): Promise<void> {
  if (ids.length === 0) return;
  await db.updateTable('mail_messages').set((eb) => ({ attempts: eb('attempts', '+', 1), last_error: null, status: 'sent', sent_at: at })).where('id', 'in', ids).execute();
}

/** Records one more try that failed: still queued for another, or failed for good. */
export async function recordFailedTry(db: Db, id: string, error: string, gaveUp: boolean): Promise<void> {
  await db.updateTable('mail_messages').set((eb) => ({ attempts: eb('attempts', '+', 1), last_error: error, status: gaveUp ? 'failed' : 'queued' })).where('id', '=', id).execute();
}
