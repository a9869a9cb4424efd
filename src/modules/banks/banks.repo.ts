import type { Kysely } from 'kysely';
import type { Database } from '../../store/tables.ts';
import type { BankClientSecretsTable } from './banks.tables.ts';

type Db = Kysely<Database>;

/** Stores a client's secret unless one is stored already (a concurrent first start keeps one). */
export async function insertClientSecretIfNone(db: Db, row: BankClientSecretsTable): Promise<void> {
  await db
    .insertInto('bank_client_secrets')
    .values(row)
    .onConflict((oc) => oc.column('client_id').doNothing())
    .execute();
}

export async function findClientSecret(db: Db, clientId: string): Promise<string | undefined> {
  const row = await db
    .selectFrom('bank_client_secrets')
    .select('secret_sealed')
    .where('client_id', '=', clientId)
    .executeTakeFirst();
  return row?.secret_sealed;
}
