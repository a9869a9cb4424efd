import type { Kysely } from 'kysely';

// A bank may issue an enduring consent's access token for a while only, with a refresh token that
// renews it (OAuth 2). The three holders of such a token keep the refresh token sealed beside the
// access token, and when the access token expires (epoch ms, real time), when the bank said
// (docs/banks.md, "Consent tokens that expire"). Rows from before have neither: their access token
// is used as it was, and a bank that refuses it refuses the payment as before.
export async function up(db: Kysely<any>): Promise<void> {
  for (const table of ['recurring_consents', 'subscriptions', 'refund_authorities']) {
    await db.schema.alterTable(table).addColumn('bank_refresh_token', 'text').execute();
    await db.schema.alterTable(table).addColumn('bank_token_expires_at', 'bigint').execute();
  }
}
