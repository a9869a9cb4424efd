import type { Kysely, Selectable } from 'kysely';
import type { IdsQuery } from '../../store/owned-rows.ts';
import type { Database } from '../../store/tables.ts';
import type { EnduringAuthorisationsTable } from './authorisations.tables.ts';

type Db = Kysely<Database>;
export type AuthorisationRow = Selectable<EnduringAuthorisationsTable>;

export async function insertAuthorisation(db: Db, row: AuthorisationRow): Promise<void> {
  await db.insertInto('enduring_authorisations').values(row).execute();
}

export async function findAuthorisation(db: Db, state: string): Promise<AuthorisationRow | undefined> {
  return db.selectFrom('enduring_authorisations').selectAll().where('state', '=', state).executeTakeFirst();
}

export async function setAuthorisationBankConsent(db: Db, state: string, bankConsentId: string): Promise<void> {
  await db
    .updateTable('enduring_authorisations')
    .set({ bank_consent_id: bankConsentId })
    .where('state', '=', state)
    .execute();
}

/** Settles a pending authorisation; false when another return already did (or it never existed). */
export async function closeAuthorisation(
  db: Db,
  state: string,
  outcome: string,
  now: number,
  objectId: string | null = null,
): Promise<boolean> {
  const result = await db
    .updateTable('enduring_authorisations')
    .set({ outcome, object_id: objectId, completed_at: now })
    .where('state', '=', state)
    .where('outcome', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** A request's newest authorisation still waiting for the payer, once its bank made the consent. */
export async function findPendingAuthorisationOfRequest(
  db: Db,
  requestId: string,
): Promise<AuthorisationRow | undefined> {
  return db
    .selectFrom('enduring_authorisations')
    .selectAll()
    .where('request_id', '=', requestId)
    .where('outcome', 'is', null)
    .where('bank_consent_id', 'is not', null)
    .orderBy('created_at', 'desc')
    .limit(1)
    .executeTakeFirst();
}

/** Deletes the authorisations of some requests (a merchant's test data, manifest.ts TestData); how many there were. */
export async function deleteAuthorisationsOfRequests(db: Db, requestIds: IdsQuery): Promise<number> {
  const result = await db
    .deleteFrom('enduring_authorisations')
    .where('request_id', 'in', requestIds)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
