import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../config.ts';
import { createSecretBox, type SecretBox } from '../shared/secret-box.ts';
import { sql } from 'kysely';
import type { Db } from './db.ts';
import { migratedBefore } from './migrate.ts';
import { KEY_FILE_NAME, loadOrCreateKeyFile, SecretKeyError } from './secret-key.ts';

// Which key a database's secrets are sealed under is checked at every start of the service and of
// the CLI, before either opens or seals a secret: the first start seals a constant under its key
// (table secret_key_check, migration 0052), and every later start opens it. A start with another
// SECRET_KEY, or another DATA_DIR/secret.key, then refuses instead of failing every webhook
// delivery and sealing new secrets under a key nothing else has. The check value is a sealed
// constant (AES-256-GCM, a fresh nonce), which says nothing of the key.

const CHECK_NAME = 'secret-key';
const CHECK_PLAIN = 'tono secret key check v1';

/** A start with a key the database's secrets were not sealed with. */
export class WrongSecretKeyError extends SecretKeyError {
  constructor() {
    super('SECRET_KEY (or DATA_DIR/secret.key) is not the key this database was sealed with');
  }
}

/**
 * The service key: SECRET_KEY, else DATA_DIR/secret.key (SQLite), made on the first start only. A
 * database that was migrated before (so holds data, perhaps sealed) but has no key file and no
 * SECRET_KEY refuses to start: a new key could open none of its secrets.
 */
export async function secretBoxOf(config: Pick<Config, 'secretKey' | 'dataDir'>, db: Db): Promise<SecretBox> {
  if (config.secretKey) return createSecretBox(config.secretKey);
  const file = path.join(config.dataDir, KEY_FILE_NAME);
  if (!fs.existsSync(file) && (await migratedBefore(db))) {
    throw new SecretKeyError(
      `${file} is missing and SECRET_KEY is not set, but the database in ${config.dataDir} holds data: restore secret.key from your backup or set SECRET_KEY to the key it was sealed with`,
    );
  }
  return createSecretBox(loadOrCreateKeyFile(config.dataDir));
}

/**
 * Columns that held values sealed under the service key before the check value existed, in tables
 * a database that has served has rows in: a database from before the check is checked against one
 * of them before its check value is written, so a first start after the upgrade with the wrong key
 * cannot seal the check under it and lock the right key out.
 */
const SEALED_EARLIER = [
  { table: 'bank_client_secrets', column: 'secret_sealed' },
  { table: 'webhook_endpoints', column: 'secret' },
  { table: 'idempotency_keys', column: 'response' },
] as const;

/** A value already sealed in the database, if it has one (see SEALED_EARLIER). */
async function sealedEarlier(db: Db): Promise<string | null> {
  for (const { table, column } of SEALED_EARLIER) {
    const found = await sql<{ value: string }>`select ${sql.ref(column)} as value from ${sql.table(table)}
      where ${sql.ref(column)} like ${'sealed:v1:%'} limit 1`.execute(db);
    if (found.rows[0]) return found.rows[0].value;
  }
  return null;
}

/** The plain text of `sealed`, or null when it was sealed under another key (GCM's tag does not match). */
function openedUnder(secrets: SecretBox, sealed: string): string | null {
  try {
    return secrets.open(sealed);
  } catch {
    return null;
  }
}

/**
 * Writes the check value when the database has none, then opens it: throws WrongSecretKeyError
 * when it was sealed under another key. A database made before the check existed is first checked
 * against a value sealed in it then (sealedEarlier); one with none has nothing a wrong key could
 * lose. Several processes starting at once write one check value between them. After the migrations.
 */
export async function checkSecretKey(db: Db, secrets: SecretBox, now: number): Promise<void> {
  const written = await db
    .selectFrom('secret_key_check')
    .select('name')
    .where('name', '=', CHECK_NAME)
    .executeTakeFirst();
  if (!written) {
    const earlier = await sealedEarlier(db);
    if (earlier !== null && openedUnder(secrets, earlier) === null) throw new WrongSecretKeyError();
  }
  await db
    .insertInto('secret_key_check')
    .values({ name: CHECK_NAME, sealed: secrets.seal(CHECK_PLAIN), created_at: now })
    .onConflict((c) => c.column('name').doNothing())
    .execute();
  const row = await db
    .selectFrom('secret_key_check')
    .select('sealed')
    .where('name', '=', CHECK_NAME)
    .executeTakeFirstOrThrow();
  if (openedUnder(secrets, row.sealed) !== CHECK_PLAIN) throw new WrongSecretKeyError();
}
