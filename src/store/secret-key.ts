import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { SECRET_KEY_BYTES } from '../shared/secret-box.ts';

// The service key that seals secrets at rest. SECRET_KEY (base64 of 32 bytes) wins; without it,
// on the embedded SQLite database, a key file is made once under DATA_DIR, readable by its owner
// only, so a laptop start needs no set-up. PostgreSQL refuses to start without SECRET_KEY (see
// config.ts): several processes and machines must share one key, which a local file cannot give.

export const KEY_FILE_NAME = 'secret.key';

export class SecretKeyError extends Error {}

/** Decodes SECRET_KEY's text; null when it is not the base64 of exactly 32 bytes. */
export function decodeSecretKey(text: string): Buffer | null {
  const trimmed = text.trim();
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(trimmed)) return null;
  const key = Buffer.from(trimmed, 'base64');
  return key.length === SECRET_KEY_BYTES ? key : null;
}

/** Reads DATA_DIR/secret.key, creating it (mode 0600) when it does not exist yet. */
export function loadOrCreateKeyFile(dataDir: string): Buffer {
  const file = path.join(dataDir, KEY_FILE_NAME);
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  try {
    // 'wx' fails when the file exists, so two processes starting at once cannot make two keys.
    fs.writeFileSync(file, `${randomBytes(SECRET_KEY_BYTES).toString('base64')}\n`, { flag: 'wx', mode: 0o600 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  const key = decodeSecretKey(fs.readFileSync(file, 'utf8'));
  if (!key)
    throw new SecretKeyError(`${file} does not hold a secret key (base64 of 32 bytes); restore it from your backup`);
  return key;
}
