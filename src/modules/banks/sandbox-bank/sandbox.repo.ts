import type { ExpressionBuilder } from 'kysely';
import { lockForUpdate } from '../../../store/db.ts';
import type { SandboxDb } from './sandbox.context.ts';
import type { SandboxConsentsTable, SandboxPaymentsTable, SandboxPayersTable, SandboxTables } from './sandbox.tables.ts';

// SQL of the sandbox bank, and no rules.

export type ConsentRow = SandboxConsentsTable;
export type PaymentRow = SandboxPaymentsTable;
export type PayerRow = SandboxPayersTable;

export async function insertConsent(db: SandboxDb, row: ConsentRow): Promise<void> {
  await db.insertInto('sandbox_consents').values(row).execute();
}

export async function findConsent(db: SandboxDb, id: string, options: { forUpdate?: boolean } = {}): Promise<ConsentRow | undefined> {
  const query = db.selectFrom('sandbox_consents').selectAll().where('id', '=', id);
  return (options.forUpdate ? lockForUpdate(db, query) : query).executeTakeFirst();
}

export async function updateConsent(db: SandboxDb, id: string, changes: Partial<ConsentRow>): Promise<void> {
  await db.updateTable('sandbox_consents').set(changes).where('id', '=', id).execute();
}

export async function insertPayment(db: SandboxDb, row: PaymentRow): Promise<void> {
  await db.insertInto('sandbox_payments').values(row).execute();
}

export async function findPayment(db: SandboxDb, id: string, options: { forUpdate?: boolean } = {}): Promise<PaymentRow | undefined> {
  const query = db.selectFrom('sandbox_payments').selectAll().where('id', '=', id);
  return (options.forUpdate ? lockForUpdate(db, query) : query).executeTakeFirst();
}

export async function updatePayment(db: SandboxDb, id: string, changes: Partial<PaymentRow>): Promise<void> {
  await db.updateTable('sandbox_payments').set(changes).where('id', '=', id).execute();
}

/** Payments that count towards a consent's limits: every one not rejected. */
/** Count and sum of a consent's payments that were not rejected: in total and within a window. */
export async function usageTotals(db: SandboxDb, consentId: string, window: { start: number; end: number }) {
  const inWindow = (eb: ExpressionBuilder<SandboxTables, 'sandbox_payments'>) =>
    eb.and([eb('executed_at', '>=', window.start), eb('executed_at', '<', window.end)]);
  const row = await db
    .selectFrom('sandbox_payments')
    .select((eb) => [
      eb.fn.countAll<number>().as('count'),
      eb.fn.coalesce(eb.fn.sum<number>('amount_cents'), eb.lit(0)).as('amount'),
      eb.fn.sum<number>(eb.case().when(inWindow(eb)).then(1).else(0).end()).as('period_count'),
      eb.fn.sum<number>(eb.case().when(inWindow(eb)).then(eb.ref('amount_cents')).else(0).end()).as('period_amount'),
    ])
    .where('consent_id', '=', consentId)
    .where('status', '!=', 'Rejected')
    .executeTakeFirstOrThrow();
  return {
    count: Number(row.count),
    amountCents: Number(row.amount ?? 0),
    periodCount: Number(row.period_count ?? 0),
    periodAmountCents: Number(row.period_amount ?? 0),
  };
}

export async function findPayerByUsername(db: SandboxDb, username: string, options: { forUpdate?: boolean } = {}): Promise<PayerRow | undefined> {
  const query = db.selectFrom('sandbox_payers').selectAll().where('username', '=', username);
  return (options.forUpdate ? lockForUpdate(db, query) : query).executeTakeFirst();
}

export async function findPayer(db: SandboxDb, id: string, options: { forUpdate?: boolean } = {}): Promise<PayerRow | undefined> {
  const query = db.selectFrom('sandbox_payers').selectAll().where('id', '=', id);
  return (options.forUpdate ? lockForUpdate(db, query) : query).executeTakeFirst();
}

export async function insertPayerIfAbsent(db: SandboxDb, row: PayerRow): Promise<boolean> {
  const result = await db.insertInto('sandbox_payers').values(row).onConflict((c) => c.column('username').doNothing()).executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
}

export async function adjustBalance(db: SandboxDb, payerId: string, deltaCents: number): Promise<void> {
  await db
    .updateTable('sandbox_payers')
    .set((eb) => ({ balance_cents: eb('balance_cents', '+', deltaCents) }))
    .where('id', '=', payerId)
    .execute();
}

export async function findIdempotency(db: SandboxDb, clientId: string, endpoint: string, key: string) {
  return db
    .selectFrom('sandbox_idempotency')
    .selectAll()
    .where('client_id', '=', clientId)
    .where('endpoint', '=', endpoint)
    .where('key', '=', key)
    .executeTakeFirst();
}

export async function deleteIdempotency(db: SandboxDb, clientId: string, endpoint: string, key: string): Promise<void> {
  await db.deleteFrom('sandbox_idempotency').where('client_id', '=', clientId).where('endpoint', '=', endpoint).where('key', '=', key).execute();
}

/** False when another request holds the key already (the caller then replays that one). */
export async function claimIdempotency(
  db: SandboxDb,
  row: { client_id: string; endpoint: string; key: string; fingerprint: string; resource_id: string; created_at: number },
): Promise<boolean> {
  const result = await db
    .insertInto('sandbox_idempotency')
    .values(row)
    .onConflict((c) => c.columns(['client_id', 'endpoint', 'key']).doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
}

export async function insertAuthorisation(db: SandboxDb, row: import('./sandbox.tables.ts').SandboxAuthorisationsTable): Promise<void> {
  await db.insertInto('sandbox_authorisations').values(row).execute();
}

export async function findAuthorisation(db: SandboxDb, id: string) {
  return db.selectFrom('sandbox_authorisations').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function findAuthorisationByCode(db: SandboxDb, codeHash: string) {
  return db.selectFrom('sandbox_authorisations').selectAll().where('code_hash', '=', codeHash).executeTakeFirst();
}

export async function updateAuthorisation(db: SandboxDb, id: string, changes: Partial<import('./sandbox.tables.ts').SandboxAuthorisationsTable>): Promise<void> {
  await db.updateTable('sandbox_authorisations').set(changes).where('id', '=', id).execute();
}

/** Marks a code used; false when it was used already (a code is exchanged once). */
export async function useCode(db: SandboxDb, id: string, at: number): Promise<boolean> {
  const result = await db
    .updateTable('sandbox_authorisations')
    .set({ code_used_at: at })
    .where('id', '=', id)
    .where('code_used_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

export async function insertToken(db: SandboxDb, row: import('./sandbox.tables.ts').SandboxTokensTable): Promise<void> {
  await db.insertInto('sandbox_tokens').values(row).execute();
}

export async function findToken(db: SandboxDb, tokenHash: string) {
  return db.selectFrom('sandbox_tokens').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
}
