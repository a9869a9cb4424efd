import { holdRows, lockForUpdate } from '../store/db.ts';
import { inserted, insertRow, prepared, updateById } from '../store/prepared.ts';
import type { SandboxDb } from './sandbox.context.ts';
import type { SandboxConsentsTable, SandboxPaymentsTable, SandboxPayersTable } from './sandbox.tables.ts';

// SQL of the sandbox bank, and no rules.

export type ConsentRow = SandboxConsentsTable;
export type PaymentRow = SandboxPaymentsTable;
export type PayerRow = SandboxPayersTable;

export async function insertConsent(db: SandboxDb, row: ConsentRow): Promise<void> {
  await db.insertInto('sandbox_consents').values(row).execute();
}

const findConsentQuery = prepared<{ id: string }, ConsentRow>((db, arg) =>
  db.selectFrom('sandbox_consents').selectAll().where('id', '=', arg('id')),
);
const lockConsentQuery = prepared<{ id: string }, ConsentRow>((db, arg) =>
  lockForUpdate(db, db.selectFrom('sandbox_consents').selectAll().where('id', '=', arg('id'))),
);

export async function findConsent(
  db: SandboxDb,
  id: string,
  options: { forUpdate?: boolean } = {},
): Promise<ConsentRow | undefined> {
  return (options.forUpdate ? lockConsentQuery : findConsentQuery).first(db, { id });
}

export async function updateConsent(db: SandboxDb, id: string, changes: Partial<ConsentRow>): Promise<void> {
  await updateById(db, 'sandbox_consents', id, changes);
}

export async function insertPayment(db: SandboxDb, row: PaymentRow): Promise<void> {
  await insertRow(db, 'sandbox_payments', row);
}

export async function findPayment(
  db: SandboxDb,
  id: string,
  options: { forUpdate?: boolean } = {},
): Promise<PaymentRow | undefined> {
  const query = db.selectFrom('sandbox_payments').selectAll().where('id', '=', id);
  return (options.forUpdate ? lockForUpdate(db, query) : query).executeTakeFirst();
}

export async function updatePayment(db: SandboxDb, id: string, changes: Partial<PaymentRow>): Promise<void> {
  await updateById(db, 'sandbox_payments', id, changes);
}

/**
 * Count and sum of a consent's payments that were not rejected, executed within a window: read
 * when the consent's own period counters hold another window (the first payment of a period).
 */
export async function windowUsage(db: SandboxDb, consentId: string, window: { start: number; end: number }) {
  const row = await db
    .selectFrom('sandbox_payments')
    .select((eb) => [
      eb.fn.countAll<number>().as('count'),
      eb.fn.coalesce(eb.fn.sum<number>('amount_cents'), eb.lit(0)).as('amount'),
    ])
    .where('consent_id', '=', consentId)
    .where('executed_at', '>=', window.start)
    .where('executed_at', '<', window.end)
    .where('status', '!=', 'Rejected')
    .executeTakeFirstOrThrow();
  return { count: Number(row.count), amountCents: Number(row.amount ?? 0) };
}

/** A rejected payment stops counting: out of the totals, and out of the period counters if they hold its window. */
export async function uncountPayment(
  db: SandboxDb,
  payment: { consent_id: string; amount_cents: number; executed_at: number },
): Promise<void> {
  await db
    .updateTable('sandbox_consents')
    .set((eb) => {
      const inWindow = eb.and([
        eb('period_start', '<=', payment.executed_at),
        eb('period_end', '>', payment.executed_at),
      ]);
      return {
        used_count: eb('used_count', '-', 1),
        used_cents: eb('used_cents', '-', payment.amount_cents),
        period_count: eb
          .case()
          .when(inWindow)
          .then(eb('period_count', '-', 1))
          .else(eb.ref('period_count'))
          .end(),
        period_cents: eb
          .case()
          .when(inWindow)
          .then(eb('period_cents', '-', payment.amount_cents))
          .else(eb.ref('period_cents'))
          .end(),
      };
    })
    .where('id', '=', payment.consent_id)
    .where('kind', '=', 'enduring')
    .execute();
}

export async function findPayerByUsername(
  db: SandboxDb,
  username: string,
  options: { forUpdate?: boolean } = {},
): Promise<PayerRow | undefined> {
  const query = db.selectFrom('sandbox_payers').selectAll().where('username', '=', username);
  return (options.forUpdate ? lockForUpdate(db, query) : query).executeTakeFirst();
}

export async function findPayerById(db: SandboxDb, id: string): Promise<PayerRow | undefined> {
  return db.selectFrom('sandbox_payers').selectAll().where('id', '=', id).executeTakeFirst();
}

const findPayerByAccountNumberQuery = prepared<{ accountNumber: string }, PayerRow>((db, arg) =>
  db.selectFrom('sandbox_payers').selectAll().where('account_number', '=', arg('accountNumber')),
);

/** The holder of an account number, written in the one form (2-4-7-2). */
export async function findPayerByAccountNumber(db: SandboxDb, accountNumber: string): Promise<PayerRow | undefined> {
  return findPayerByAccountNumberQuery.first(db, { accountNumber });
}

/** Inserts the holder; false, and nothing written, when its username or its account number is held already. */
export async function insertPayerUnlessTaken(db: SandboxDb, row: PayerRow): Promise<boolean> {
  const result = await db
    .insertInto('sandbox_payers')
    .values(row)
    .onConflict((c) => c.doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
}

/**
 * Locks the holders' rows in one order (by id) before money moves between them: two payments
 * between the same two accounts in opposite directions would otherwise wait on each other.
 */
export async function lockPayers(db: SandboxDb, ids: string[]): Promise<void> {
  await holdRows(db, db.selectFrom('sandbox_payers').select('id').where('id', 'in', ids).orderBy('id'));
}

/** Takes the amount from the payer's balance if it is there; false (and nothing taken) if not. */
const debitIfFundedQuery = prepared<{ payerId: string; amountCents: number }>((db, arg) =>
  db
    .updateTable('sandbox_payers')
    .set((eb) => ({ balance_cents: eb('balance_cents', '-', arg('amountCents')) }))
    .where('id', '=', arg('payerId'))
    .where('balance_cents', '>=', arg('amountCents')),
);

export async function debitIfFunded(db: SandboxDb, payerId: string, amountCents: number): Promise<boolean> {
  return Number((await debitIfFundedQuery.run(db, { payerId, amountCents })).numAffectedRows ?? 0) === 1;
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
  await db
    .deleteFrom('sandbox_idempotency')
    .where('client_id', '=', clientId)
    .where('endpoint', '=', endpoint)
    .where('key', '=', key)
    .execute();
}

/** False when another request holds the key already (the caller then replays that one). */
export async function claimIdempotency(
  db: SandboxDb,
  row: {
    client_id: string;
    endpoint: string;
    key: string;
    fingerprint: string;
    resource_id: string;
    created_at: number;
  },
): Promise<boolean> {
  return inserted(await insertRow(db, 'sandbox_idempotency', row, ['client_id', 'endpoint', 'key']));
}

export async function insertAuthorisation(
  db: SandboxDb,
  row: import('./sandbox.tables.ts').SandboxAuthorisationsTable,
): Promise<void> {
  await db.insertInto('sandbox_authorisations').values(row).execute();
}

export async function findAuthorisation(db: SandboxDb, id: string) {
  return db.selectFrom('sandbox_authorisations').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function findAuthorisationByCode(db: SandboxDb, codeHash: string) {
  return db.selectFrom('sandbox_authorisations').selectAll().where('code_hash', '=', codeHash).executeTakeFirst();
}

export async function updateAuthorisation(
  db: SandboxDb,
  id: string,
  changes: Partial<import('./sandbox.tables.ts').SandboxAuthorisationsTable>,
): Promise<void> {
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

const findTokenQuery = prepared<{ tokenHash: string }, import('./sandbox.tables.ts').SandboxTokensTable>((db, arg) =>
  db.selectFrom('sandbox_tokens').selectAll().where('token_hash', '=', arg('tokenHash')),
);

export async function findToken(db: SandboxDb, tokenHash: string) {
  return findTokenQuery.first(db, { tokenHash });
}

export async function insertRefreshToken(
  db: SandboxDb,
  row: import('./sandbox.tables.ts').SandboxRefreshTokensTable,
): Promise<void> {
  await db.insertInto('sandbox_refresh_tokens').values(row).execute();
}

export async function findRefreshToken(db: SandboxDb, tokenHash: string) {
  return db.selectFrom('sandbox_refresh_tokens').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
}

/** Marks a refresh token used; false when it was used or revoked already (each is used once). */
export async function useRefreshToken(db: SandboxDb, tokenHash: string, at: number): Promise<boolean> {
  const result = await db
    .updateTable('sandbox_refresh_tokens')
    .set({ used_at: at })
    .where('token_hash', '=', tokenHash)
    .where('used_at', 'is', null)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** The consent's access tokens still valid at `at` expire then; answers how many. */
export async function expireConsentAccessTokens(db: SandboxDb, consentId: string, at: number): Promise<number> {
  const result = await db
    .updateTable('sandbox_tokens')
    .set({ expires_at: at })
    .where('consent_id', '=', consentId)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', at)]))
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** The consent's refresh tokens not yet used are revoked at `at`; answers how many. */
export async function revokeConsentRefreshTokens(db: SandboxDb, consentId: string, at: number): Promise<number> {
  const result = await db
    .updateTable('sandbox_refresh_tokens')
    .set({ revoked_at: at })
    .where('consent_id', '=', consentId)
    .where('used_at', 'is', null)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}
