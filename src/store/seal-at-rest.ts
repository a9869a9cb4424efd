import { sql, type Transaction } from 'kysely';
import { isSealed, type SecretBox } from '../shared/secret-box.ts';
import type { Db } from './db.ts';
import type { Database } from './tables.ts';
import { transact } from './store.ts';

// Secrets written before they were sealed at rest (docs/security.md) are sealed once, at the first
// start with a service key: a migration cannot do it, having no key. Recorded in store_tasks, so
// it runs once per database even when several processes start together. Each module seals its
// own tables (its manifest's sealSecrets); the store seals the stored idempotent replies.

const TASK = 'seal-secrets-v1';

export type SealSecrets = (trx: Transaction<Database>, secrets: SecretBox) => Promise<void>;

/** A condition on a text column: its value is not sealed yet. */
export const notSealed = (column: string) => sql<boolean>`${sql.ref(column)} not like ${'sealed:v1:%'}`;

export async function sealStoredSecrets(
  db: Db,
  secrets: SecretBox,
  now: number,
  sealers: SealSecrets[],
): Promise<boolean> {
  return transact(db, async (trx) => {
    const claimed = await trx
      .insertInto('store_tasks')
      .values({ name: TASK, done_at: now })
      .onConflict((c) => c.column('name').doNothing())
      .executeTakeFirst();
    if (Number(claimed.numInsertedOrUpdatedRows ?? 0) === 0) return false;
    for (const seal of sealers) await seal(trx, secrets);
    const replies = await trx
      .selectFrom('idempotency_keys')
      .select(['user_id', 'mode', 'key', 'response'])
      .where('response', 'is not', null)
      .where(notSealed('response'))
      .execute();
    for (const row of replies) {
      if (row.response === null || isSealed(row.response)) continue;
      await trx
        .updateTable('idempotency_keys')
        .set({ response: secrets.seal(row.response) })
        .where('user_id', '=', row.user_id)
        .where('mode', '=', row.mode)
        .where('key', '=', row.key)
        .execute();
    }
    return true;
  });
}
