import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { createRuntime, prepareStore } from '../runtime.ts';
import { createSecretBox } from '../shared/secret-box.ts';
import { engine, freshDb, testConfig, TEST_SECRET_KEY } from '../../test/helpers.ts';
import { processStore, runCli, runMain, storeOfTestDb } from '../../test/process.ts';
import { checkSecretKey, secretBoxOf, WrongSecretKeyError } from './key-check.ts';
import { migrateTo } from './migrate.ts';
import { KEY_FILE_NAME } from './secret-key.ts';

// The service key is checked against the database at every start (src/store/key-check.ts).

const WRONG_KEY = 'SECRET_KEY (or DATA_DIR/secret.key) is not the key this database was sealed with';
const ourKey = Buffer.from(TEST_SECRET_KEY, 'base64');
const otherKey = randomBytes(32);
const log = pino({ level: 'silent' });

test('a start with another key than the database was sealed with refuses before it seals anything', async (t) => {
  const testDb = await freshDb();
  t.after(() => testDb.drop());
  await prepareStore(testDb.db, createSecretBox(ourKey), Date.now());
  const sealedBefore = await testDb.db.selectFrom('secret_key_check').selectAll().execute();
  assert.equal(sealedBefore.length, 1);
  assert.match(sealedBefore[0]!.sealed, /^sealed:v1:/);

  // The sandbox client secret (which used to be the only, accidental, check) is not stored here.
  await assert.rejects(
    createRuntime(testConfig({ secretKey: otherKey, workers: false, sandboxClientSecret: 'from-env' }), {
      db: testDb.db,
      log,
    }),
    (error: unknown) => error instanceof WrongSecretKeyError && error.message === WRONG_KEY,
  );
  assert.deepEqual(await testDb.db.selectFrom('secret_key_check').selectAll().execute(), sealedBefore);
  // A cluster process (no store preparation) checks the same way; the right key passes.
  await assert.rejects(checkSecretKey(testDb.db, createSecretBox(otherKey), Date.now()), WrongSecretKeyError);
  await checkSecretKey(testDb.db, createSecretBox(ourKey), Date.now());

  // The service prints one line about the key, not about the database; the CLI refuses too.
  const store = storeOfTestDb(t, testDb);
  const other = { ...store.env, SECRET_KEY: otherKey.toString('base64') };
  const started = runMain({ ...other, PORT: '0', SANDBOX_CLIENT_SECRET: 'from-env' });
  assert.equal(started.status, 1);
  assert.equal(started.stderr, `tono: ${WRONG_KEY}\n`);
  const cli = await runCli({ ...store, env: other }, ['payments', 'unanswered']);
  assert.equal(cli.status, 1);
  assert.equal(cli.stderr, `error: ${WRONG_KEY}\n`);
  assert.equal((await runCli(store, ['payments', 'unanswered'])).status, 0);
});

test('a database made before the check gets its value at the next start, and is checked from then on', async (t) => {
  const testDb = await freshDb();
  t.after(() => testDb.drop());
  await migrateTo(testDb.db, '0051-payer-code-used-with');
  // Its first start cannot tell whether its key is the one its secrets were sealed with.
  await prepareStore(testDb.db, createSecretBox(ourKey), Date.now());
  assert.equal((await testDb.db.selectFrom('secret_key_check').selectAll().execute()).length, 1);
  await assert.rejects(prepareStore(testDb.db, createSecretBox(otherKey), Date.now()), WrongSecretKeyError);
  await prepareStore(testDb.db, createSecretBox(ourKey), Date.now());
});

test('a database made before the check, holding secrets, refuses a wrong key at its first start after the upgrade, and the right key still opens it', async (t) => {
  const testDb = await freshDb();
  t.after(() => testDb.drop());
  await migrateTo(testDb.db, '0051-payer-code-used-with');
  await testDb.db
    .insertInto('idempotency_keys')
    .values({
      user_id: 'user_1',
      mode: 'live',
      key: 'order-1',
      endpoint: 'POST /v1/requests',
      fingerprint: 'f',
      status_code: 201,
      response: createSecretBox(ourKey).seal('{"request":{}}'),
      created_at: 1,
      expires_at: 9e15,
    })
    .execute();
  await assert.rejects(prepareStore(testDb.db, createSecretBox(otherKey), Date.now()), WrongSecretKeyError);
  assert.equal(
    (await testDb.db.selectFrom('secret_key_check').selectAll().execute()).length,
    0,
    'the wrong key sealed no check value',
  );
  await prepareStore(testDb.db, createSecretBox(ourKey), Date.now());
  await assert.rejects(prepareStore(testDb.db, createSecretBox(otherKey), Date.now()), WrongSecretKeyError);
});

test('SQLite: a DATA_DIR whose database holds data but whose secret.key is gone gets no new key', {
  skip: engine !== 'sqlite',
}, async (t) => {
  const store = await processStore(t);
  assert.equal((await runCli(store, ['migrate'])).status, 0);
  const keyFile = path.join(store.dataDir, KEY_FILE_NAME);
  assert.ok(fs.existsSync(keyFile), 'the first migrate makes the key, as the first start does');
  fs.rmSync(keyFile);
  const refusal = `${keyFile} is missing and SECRET_KEY is not set, but the database in ${store.dataDir} holds data: restore secret.key from your backup or set SECRET_KEY to the key it was sealed with`;

  const started = runMain({ ...store.env, PORT: '0' });
  assert.equal(started.status, 1);
  assert.equal(started.stderr, `tono: ${refusal}\n`);
  const cli = await runCli(store, ['migrate']);
  assert.equal(cli.status, 1);
  assert.equal(cli.stderr, `error: ${refusal}\n`);
  assert.equal(fs.existsSync(keyFile), false);

  // A new DATA_DIR (no database yet) still makes its key at the first start.
  const fresh = await freshDb();
  t.after(() => fresh.drop());
  const dataDir = path.dirname(fresh.file!);
  await secretBoxOf({ secretKey: null, dataDir }, fresh.db);
  assert.ok(fs.existsSync(path.join(dataDir, KEY_FILE_NAME)));
});
