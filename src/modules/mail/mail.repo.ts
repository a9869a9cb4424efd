import type { Kysely, Selectable } from 'kysely';
import { inJsonArray } from '../../store/db.ts';
import { inserted, insertRow, prepared } from '../../store/prepared.ts';
import type { Database } from '../../store/tables.ts';
import type { MailMessagesTable } from './mail.tables.ts';
import { countOwned, deleteOwned } from '../../store/owned-rows.ts';

// Every subscription charge queues a receipt, so the statements of queueing, loading and recording
// a message are prepared (store/prepared.ts): built through Kysely for each message, they cost a
// charge more than their SQL did (docs/performance.md, A subscription charge).

type Db = Kysely<Database>;
export type MailRow = Selectable<MailMessagesTable>;

/** Inserts a message; false when one with its dedupe key exists already. */
export async function insertMessage(db: Db, row: MailRow): Promise<boolean> {
  return inserted(await insertRow(db, 'mail_messages', row, 'dedupe_key'));
}

const messagesByIdsQuery = prepared<{ ids: string }, MailRow>((db, arg) =>
  db
    .selectFrom('mail_messages')
    .selectAll()
    .where(inJsonArray(db, 'id', arg('ids'))),
);

export async function messagesByIds(db: Db, ids: string[]): Promise<MailRow[]> {
  if (ids.length === 0) return [];
  return messagesByIdsQuery.all(db, { ids: JSON.stringify(ids) });
}

const recordSentQuery = prepared<{ ids: string; at: number }>((db, arg) =>
  db
    .updateTable('mail_messages')
    .set((eb) => ({ attempts: eb('attempts', '+', 1), last_error: null, status: 'sent', sent_at: arg('at') }))
    .where(inJsonArray(db, 'id', arg('ids'))),
);

/** Records one more try of each message, sent at `at`. */
export async function recordSent(db: Db, ids: string[], at: number): Promise<void> {
  if (ids.length === 0) return;
  await recordSentQuery.run(db, { ids: JSON.stringify(ids), at });
}

/** Records one more try that failed: still queued for another, or failed for good. */
export async function recordFailedTry(db: Db, id: string, error: string, gaveUp: boolean): Promise<void> {
  await db
    .updateTable('mail_messages')
    .set((eb) => ({ attempts: eb('attempts', '+', 1), last_error: error, status: gaveUp ? 'failed' : 'queued' }))
    .where('id', '=', id)
    .execute();
}

// A merchant's test-mode messages, counted and deleted with the rest of their test data
// (manifest.ts, TestData). Messages have no index by merchant: both read the whole table, which
// only a merchant deleting their test data asks for.

export function countTestMessages(db: Db, userId: string): Promise<number> {
  return countOwned(db, 'mail_messages', { userId, mode: 'test' });
}

export function deleteTestMessages(db: Db, userId: string): Promise<number> {
  return deleteOwned(db, 'mail_messages', { userId, mode: 'test' });
}

/** A merchant's messages about one object in one mode, newest first (the `mail_messages_related` index). */
export function messagesAbout(
  db: Db,
  owner: { userId: string; mode: string },
  related: { type: string; id: string },
  limit: number,
): Promise<MailRow[]> {
  return db
    .selectFrom('mail_messages')
    .selectAll()
    .where('related_type', '=', related.type)
    .where('related_id', '=', related.id)
    .where('user_id', '=', owner.userId)
    .where('mode', '=', owner.mode as MailRow['mode'])
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}

/** One of a merchant's messages in one mode, or undefined. */
export function ownedMessage(
  db: Db,
  owner: { userId: string; mode: string },
  id: string,
): Promise<MailRow | undefined> {
  return db
    .selectFrom('mail_messages')
    .selectAll()
    .where('id', '=', id)
    .where('user_id', '=', owner.userId)
    .where('mode', '=', owner.mode as MailRow['mode'])
    .executeTakeFirst();
}
