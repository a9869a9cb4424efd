import type { Config } from '../../config.ts';
import { randomSecret } from '../../shared/crypto.ts';
import type { SecretBox } from '../../shared/secret-box.ts';
import type { Db } from '../../store/db.ts';
import { findClientSecret, insertClientSecretIfNone } from './banks.repo.ts';
import { SERVICE_CLIENT_ID, STANDALONE_CLIENT_SECRET } from '../../sandbox-bank/sandbox-bank.app.ts';
import type { ClientCredentials } from './security.ts';

// The service's client at its sandbox bank (docs/banks.md, "The sandbox bank's client"). With the
// client's secret anyone could act at the bank as the service: create payers with any balance, or
// revoke and decline on any test consent whose id they know. So the mounted bank's secret is made
// at the first start, kept sealed in the database and shown nowhere; merchants drive the sandbox
// through the test helpers with their test key, on their own objects only. A sandbox bank run on
// its own (SANDBOX_BANK_URL, e.g. npm run sandbox-bank) is reached with SANDBOX_CLIENT_SECRET, or
// the secret it documents for that use.

/** The credentials the service presents to the sandbox bank its registry reaches. */
export async function sandboxClientCredentials(
  db: Db,
  secrets: SecretBox,
  config: Pick<Config, 'sandboxBankUrlSet' | 'sandboxClientSecret'>,
  now: number,
): Promise<ClientCredentials> {
  if (config.sandboxClientSecret) return { clientId: SERVICE_CLIENT_ID, clientSecret: config.sandboxClientSecret };
  if (config.sandboxBankUrlSet) return { clientId: SERVICE_CLIENT_ID, clientSecret: STANDALONE_CLIENT_SECRET };
  await insertClientSecretIfNone(db, {
    client_id: SERVICE_CLIENT_ID,
    secret_sealed: secrets.seal(randomSecret(32)),
    created_at: now,
  });
  const sealed = await findClientSecret(db, SERVICE_CLIENT_ID);
  if (!sealed) throw new Error('the sandbox bank client secret was not stored');
  return { clientId: SERVICE_CLIENT_ID, clientSecret: secrets.open(sealed) };
}
