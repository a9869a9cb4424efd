import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { KEY_FILE_NAME, loadOrCreateKeyFile, SecretKeyError } from './secret-key.ts';
import { runMain } from '../../test/process.ts';

test('the key file is made once, owner-only, and read back the same', (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tono-key-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const first = loadOrCreateKeyFile(path.join(dir, 'data'));
  const file = path.join(dir, 'data', KEY_FILE_NAME);
  assert.equal(first.length, 32);
  assert.equal(fs.statSync(file).mode & 0o777, 0o600);
  assert.deepEqual(loadOrCreateKeyFile(path.join(dir, 'data')), first);
  fs.writeFileSync(file, 'not a key\n');
  assert.throws(
    () => loadOrCreateKeyFile(path.join(dir, 'data')),
    (error: unknown) =>
      error instanceof SecretKeyError &&
      error.message === `${file} does not hold a secret key (base64 of 32 bytes); restore it from your backup`,
  );
});

test('a damaged key file stops the start with one line', (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tono-key-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.writeFileSync(path.join(dir, KEY_FILE_NAME), 'garbage');
  const result = runMain({ DATA_DIR: dir, PORT: '0' });
  assert.notEqual(result.status, 0);
  assert.equal(
    result.stderr,
    `tono: ${path.join(dir, KEY_FILE_NAME)} does not hold a secret key (base64 of 32 bytes); restore it from your backup\n`,
  );
});
