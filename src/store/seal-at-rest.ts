import { sql } from 'kysely';
import { isSealed, type SecretBox } from '../shared/secret-box.ts';
import type { Db } from './db.ts';
import { transact } from './tx.ts';

// Secrets written before they were sealed at rest (docs/security.md) are sealed once, at the first
// start with a service key: a migration cannot do it, having no key. Recorded in store_tasks, so
// it runs once per database even when several processes start together.

const TASK = 'seal-secrets-v1';

/** The recurring token as the events API shows it: its prefix, an ellipsis and its last 4 characters. */
function masked(token: string): string {
  return `${token.slice(0, 4)}…${token.slice(-4)}`;
}

export async function sealStoredSecrets(db: Db, secrets: SecretBox, now: number): Promise<boolean> {
  return transact(db, async (trx) => {
    const claimed = await trx.insertInto('store_tasks').values({ name: TASK, done_at: now })
      .onConflict((c) => c.column('name').doNothing()).executeTakeFirst();
    if (Number(claimed.numInsertedOrUpdatedRows ?? 0) === 0) return false;

    const events = await trx.selectFrom('events').select(['id', 'body'])
      .where('type', '=', 'recurring_payment.authorised').where('secret_sealed', 'is', null).execute();
    for (const event of events) {
      const envelope = JSON.parse(event.body) as { data: { token?: unknown } };
      const token = envelope.data.token;
      if (typeof token !== 'string' || token.includes('…')) continue;
      envelope.data.token = masked(token);
      await trx.updateTable('events').set({ body: JSON.stringify(envelope), secret_sealed: secrets.seal(token) }).where('id', '=', event.id).execute();
      // Deliveries made before: they were the event's own, so their retries may carry the token.
      await trx.updateTable('webhook_deliveries').set({ with_secret: 1 }).where('event_id', '=', event.id).execute();
    }
    const unsealed = (column: string) => sql<boolean>`${sql.ref(column)} not like ${'sealed:v1:%'}`;
    for (const row of await trx.selectFrom('webhook_endpoints').select(['id', 'secret']).where('secret', '!=', '').where(unsealed('secret')).execute()) {
      await trx.updateTable('webhook_endpoints').set({ secret: secrets.seal(row.secret) }).where('id', '=', row.id).execute();
    }
    for (const table of ['recurring_consents', 'subscriptions'] as const) {
      const rows = await trx.selectFrom(table).select(['id', 'bank_access_token']).where(unsealed('bank_access_token')).execute();
      for (const row of rows) await trx.updateTable(table).set({ bank_access_token: secrets.seal(row.bank_access_token) }).where('id', '=', row.id).execute();
    }
    const replies = await trx.selectFrom('idempotency_keys').select(['user_id', 'mode', 'key', 'response']).where('response', 'is not', null).where(unsealed('response')).execute();
    for (const row of replies) {
      if (row.response === null || isSealed(row.response)) continue;
      await trx.updateTable('idempotency_keys').set({ response: secrets.seal(row.response) })
        .where('user_id', '=', row.user_id).where('mode', '=', row.mode).where('key', '=', row.key).execute();
    }
    return true;
  });
}
