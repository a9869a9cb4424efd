import type { Kysely } from 'kysely';

// Bank account numbers are kept in one form, BB-bbbb-AAAAAAA-SS, the Payments NZ standard's 2-4-7-2
// (docs/banks.md, "Account numbers"); rows written with a three-digit suffix (0xx) take it here.
export async function up(db: Kysely<any>): Promise<void> {
  const rows: Array<{ id: string; account_number: string }> = await db
    .selectFrom('bank_accounts')
    .select(['id', 'account_number'])
    .execute();
  for (const row of rows) {
    const match = /^(\d{2}-\d{4}-\d{7}-)0(\d{2})$/.exec(row.account_number);
    if (!match) continue;
    await db
      .updateTable('bank_accounts')
      .set({ account_number: `${match[1]}${match[2]}` })
      .where('id', '=', row.id)
      .execute();
  }
}
