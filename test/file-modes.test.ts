// What the service writes under DATA_DIR is its owner's only, whatever the umask: the folder and the
// mail folder 0700; the database, its -wal and -shm, and the mail files (sign-in codes) 0600. The
// backup's modes are tested with the CLI (src/cli/cli.test.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { openDb } from '../src/store/store.ts';
import { createMailDelivery } from '../src/modules/mail/mail.delivery.ts';

const modeOf = (file: string) => fs.statSync(file).mode & 0o777;

function tempDir(t: { after(fn: () => void): void }): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tono-modes-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** The usual umask, which leaves new files readable by every account, for the test's length. */
function usualUmask(t: { after(fn: () => void): void }): void {
  const before = process.umask(0o022);
  t.after(() => process.umask(before));
}

test('DATA_DIR, the database and its -wal and -shm are owner-only, also when made readable before', async (t) => {
  usualUmask(t);
  const dataDir = path.join(tempDir(t), 'data');
  const file = path.join(dataDir, 'tono.db');
  const open = async () => {
    const db = openDb({ engine: 'sqlite', file });
    await sql`create table if not exists kept (n integer)`.execute(db);
    await sql`insert into kept (n) values (1)`.execute(db);
    return db;
  };
  const db = await open();
  assert.deepEqual(
    [modeOf(dataDir), modeOf(file), modeOf(`${file}-wal`), modeOf(`${file}-shm`)],
    [0o700, 0o600, 0o600, 0o600],
  );
  // Files left readable (by an earlier start) are made owner-only at the next open.
  for (const name of [file, `${file}-wal`, `${file}-shm`]) fs.chmodSync(name, 0o644);
  const again = await open();
  assert.deepEqual([modeOf(file), modeOf(`${file}-wal`), modeOf(`${file}-shm`)], [0o600, 0o600, 0o600]);
  await again.destroy();
  await db.destroy();
});

test('mail written to files (sign-in codes among it) is owner-only, its folders too', async (t) => {
  usualUmask(t);
  const dataDir = path.join(tempDir(t), 'data');
  const delivery = createMailDelivery({
    smtpUrl: null,
    dataDir,
    mailFrom: 'tono@example.com',
    publicBaseUrl: 'http://127.0.0.1:3000',
  });
  t.after(() => delivery.close());
  const mail = {
    to: 'payer@example.com',
    subject: 'Your sign-in code',
    text: 'Code: 123456',
    html: '<p>Code: 123456</p>',
  };
  const live = await delivery.deliver({ ...mail, id: 'mail_01LIVE', owner: null });
  const testMail = await delivery.deliver({ ...mail, id: 'mail_01TEST', owner: { userId: 'user_1', mode: 'test' } });
  assert.ok(live && testMail);
  assert.deepEqual(
    [
      modeOf(path.join(dataDir, 'mail')),
      modeOf(path.join(dataDir, 'mail', 'test', 'user_1')),
      modeOf(live),
      modeOf(testMail),
    ],
    [0o700, 0o700, 0o600, 0o600],
  );
});
