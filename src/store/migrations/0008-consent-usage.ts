import { sql, type Kysely } from 'kysely';

// Usage counters on the consent row, so a limit check reads one row instead of summing every
// payment the consent ever made. Totals cover all counted payments (successful, unconfirmed,
// awaiting-consent); the period counters cover one calendar window, [period_start, period_end),
// and a null window means "unknown: sum that window's payments when it is next needed".
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('recurring_consents')
    .addColumn('used_count', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('recurring_consents')
    .addColumn('used_cents', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.alterTable('recurring_consents').addColumn('period_start', 'bigint').execute();
  await db.schema.alterTable('recurring_consents').addColumn('period_end', 'bigint').execute();
  await db.schema
    .alterTable('recurring_consents')
    .addColumn('period_count', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('recurring_consents')
    .addColumn('period_cents', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();
  await backfillConsentUsage(db);
  // The period sums read payments by (recurring_consent_id, created_at): 0002 created that index.
}

/**
 * Sets every consent's totals from its payments and forgets its period window. Plain SQL that
 * SQLite and PostgreSQL both run; the statuses are COUNTED_STATUSES of the consents module, written
 * out because a migration must not change when that module does.
 */
export async function backfillConsentUsage(db: Kysely<any>): Promise<void> {
  const counted = sql`payments.recurring_consent_id = recurring_consents.id
    and payments.status in ('successful', 'unconfirmed', 'awaiting-consent')`;
  await sql`
    update recurring_consents set
      used_count = (select count(*) from payments where ${counted}),
      used_cents = (select coalesce(sum(payments.amount_cents), 0) from payments where ${counted}),
      period_start = null,
      period_end = null,
      period_count = 0,
      period_cents = 0
  `.execute(db);
}
