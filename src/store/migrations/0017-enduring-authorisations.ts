import { sql, type Kysely } from 'kysely';

// One table for payers sent to their bank to approve an enduring consent, whether it becomes a
// recurring consent or a subscription (docs/architecture.md): the rows of the two tables it
// replaces move over, outcomes in one vocabulary (null while pending; authorised, declined, failed).
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('enduring_authorisations')
    .addColumn('state', 'text', (c) => c.primaryKey())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('request_id', 'text', (c) => c.notNull().references('requests.id'))
    .addColumn('bank_id', 'text', (c) => c.notNull())
    .addColumn('bank_consent_id', 'text')
    .addColumn('details', 'text')
    .addColumn('channel', 'text')
    .addColumn('outcome', 'text')
    .addColumn('object_id', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('completed_at', 'bigint')
    .execute();
  await db.schema
    .createIndex('enduring_authorisations_request')
    .on('enduring_authorisations')
    .column('request_id')
    .execute();

  await sql`
    insert into enduring_authorisations (state, kind, request_id, bank_id, bank_consent_id, details, channel, outcome, object_id, created_at, completed_at)
    select a.state, 'recurring', a.request_id, a.bank_id, a.bank_consent_id, a.details, null, a.outcome,
      case when a.outcome = 'authorised' then (select r.id from recurring_consents r where r.request_id = a.request_id) else null end,
      a.created_at, a.completed_at
    from consent_authorisations a`.execute(db);
  await sql`
    insert into enduring_authorisations (state, kind, request_id, bank_id, bank_consent_id, details, channel, outcome, object_id, created_at, completed_at)
    select a.state, 'subscription', a.request_id, a.bank_id, a.bank_consent_id, a.payer_details, a.channel,
      case a.outcome when 'pending' then null when 'active' then 'authorised' else a.outcome end,
      a.subscription_id, a.created_at,
      case when a.outcome = 'pending' then null else a.updated_at end
    from subscription_authorisations a`.execute(db);
  await db.schema.dropTable('consent_authorisations').execute();
  await db.schema.dropTable('subscription_authorisations').execute();
}
