import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { apiClient, buildTestApp, createTestMerchant, freshDb, testConfig } from '../../../test/helpers.ts';
import { smtpReceiver } from '../../../test/smtp.ts';
import { createRuntime } from '../../runtime.ts';
import { transact } from '../../store/store.ts';
import { createMailSender, queueMail, type MailSender } from './mail.service.ts';
import { TEST_MAIL_KEPT } from './mail.delivery.ts';
import { MailDispatcher } from './mail.dispatcher.ts';
import type { Clock } from '../../shared/time.ts';
import { renderMail, TEMPLATE_NAMES } from './mail.templates.ts';
import { mailSamples } from '../../../test/support/mail-samples.ts';

test('every template renders a subject, a plain-text part and an escaped HTML part carrying the link', () => {
  for (const name of TEMPLATE_NAMES) {
    const mail = renderMail(name, mailSamples[name] as never, 'https://pay.example/customer');
    assert.ok(mail.subject.length > 5, name);
    assert.ok(mail.text.includes('https://pay.example/customer'), `${name} text has the link`);
    assert.ok(mail.html.includes('https://pay.example/customer'), `${name} html has the link`);
    assert.doesNotMatch(mail.html, /<Coffee>/, `${name} escapes`);
  }
  assert.match(renderMail('consent_authorised', mailSamples.consent_authorised, 'x').html, /Kōwhai &lt;Coffee&gt;/);
  assert.match(renderMail('subscription_set_up', mailSamples.subscription_set_up, 'x').subject, /^\[Test\] /);
  const receipt = renderMail('charge_receipt', mailSamples.charge_receipt, 'x').text;
  assert.match(receipt, /Particulars {2}SUB-1\n {2}Code {9}TONO\n {2}Reference {4}INV-1/);
  assert.match(
    renderMail('charge_failed', mailSamples.charge_failed, 'x').text,
    /tried again on Thursday 4 March 2027 at 10:00am/,
  );
});

test('a test-mode message says so at the top of its plain text, as its HTML does; a live one does not', () => {
  const notice = 'Test mode: no real money moved.\n\n';
  // A payer's receipt, and a notice to the merchant.
  for (const [name, data] of [
    ['charge_receipt', mailSamples.charge_receipt],
    ['webhook_disabled', mailSamples.webhook_disabled],
  ] as const) {
    const test = renderMail(name, { ...data, test: true } as never, 'https://pay.example/customer');
    assert.ok(test.text.startsWith(notice), `${name}: ${test.text.slice(0, 60)}`);
    assert.match(test.subject, /^\[Test\] /);
    assert.match(test.html, /Test mode\.<\/strong> No real money moved\./);
    const live = renderMail(name, { ...data, test: false } as never, 'https://pay.example/customer');
    assert.ok(!live.text.includes('Test mode'), `${name} live`);
    assert.equal(test.text, notice + live.text, `${name}: the same text under the notice`);
  }
  // A message that is never about money (a sign-in code) has no mode.
  assert.ok(!renderMail('payer_code', mailSamples.payer_code, 'x').text.includes('Test mode'));
});

test('a queued message is sent over SMTP once, with a stable Message-ID, after a refused first try, and recorded', async (t) => {
  const smtp = await smtpReceiver(t);
  const app = await buildTestApp(t, { smtpUrl: smtp.url, workers: true, publicBaseUrl: 'https://pay.example' });
  smtp.refuseNext(1);
  const id = await transact(app.deps.db, (trx) =>
    queueMail(
      trx,
      {
        to: 'Payer@Example.com',
        template: 'consent_revoked',
        data: mailSamples.consent_revoked,
        related: { type: 'recurring_consent', id: 'recurring_x' },
        dedupeKey: 'k1',
      },
      app.deps.clock.now(),
    ),
  );
  assert.ok(id);
  // the same notice queued again (a retried transaction) is not a second message
  assert.equal(
    await transact(app.deps.db, (trx) =>
      queueMail(
        trx,
        { to: 'payer@example.com', template: 'consent_revoked', data: mailSamples.consent_revoked, dedupeKey: 'k1' },
        0,
      ),
    ),
    null,
  );

  const mail = await smtp.waitFor((m) => m.to === 'payer@example.com');
  assert.equal(mail.messageId, `<${id}@pay.example>`);
  assert.equal(app.deps.config.mailFrom, 'Tono <no-reply@127.0.0.1>');
  assert.equal(mail.from, 'no-reply@127.0.0.1', 'the envelope is from MAIL_FROM');
  assert.match(mail.raw, /^From: Tono <no-reply@127\.0\.0\.1>$/m);
  assert.match(mail.subject, /Your payment authority for Kōwhai Coffee has been revoked/);
  assert.match(mail.text, /revoked by your bank/);
  assert.match(mail.html, /<strong>Kōwhai Coffee<\/strong>/);
  assert.match(mail.raw, /multipart\/alternative/);

  const row = await waitForRow(app.deps.db, id, (r) => r.status === 'sent');
  assert.equal(row.attempts, 2, 'one refused try, then sent');
  assert.equal(row.to_address, 'payer@example.com');
  assert.deepEqual(
    [row.template, row.related_type, row.related_id],
    ['consent_revoked', 'recurring_consent', 'recurring_x'],
  );
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.equal(smtp.messages.length, 1);
});

test('a one-time code is sealed at rest', async (t) => {
  const app = await buildTestApp(t);
  const id = await transact(app.deps.db, (trx) =>
    queueMail(
      trx,
      { to: 'p@example.com', template: 'payer_code', data: { code: '987654', minutes: 10 } },
      0,
      app.deps.secrets,
    ),
  );
  const row = await app.deps.db.selectFrom('mail_messages').selectAll().where('id', '=', id!).executeTakeFirstOrThrow();
  assert.doesNotMatch(row.data, /987654/);
});

test('without SMTP_URL a message is written to DATA_DIR/mail as .eml and its subject logged', async (t) => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tono-mail-'));
  t.after(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const lines: string[] = [];
  const log = pino(
    { level: 'info' },
    new Writable({
      write(chunk, _e, done) {
        lines.push(String(chunk));
        done();
      },
    }),
  );
  const testDb = await freshDb();
  const runtime = await createRuntime(testConfig({ dataDir, smtpUrl: null, workers: true }), { db: testDb.db, log });
  t.after(async () => {
    await runtime.close();
    await testDb.drop();
  });
  const id = await transact(runtime.deps.db, (trx) =>
    queueMail(
      trx,
      { to: 'p@example.com', template: 'payer_code', data: { code: '246810', minutes: 10 } },
      0,
      runtime.deps.secrets,
    ),
  );
  await waitForRow(runtime.deps.db, id!, (r) => r.status === 'sent');
  const eml = fs.readFileSync(path.join(dataDir, 'mail', `${id}.eml`), 'utf8');
  assert.match(eml, /Subject: Your Tono sign-in code: 246810/);
  assert.match(eml, /Message-ID: <mail_[0-9A-Z]{26}@127\.0\.0\.1>/i);
  const logged = lines.map((l) => JSON.parse(l)).find((l) => l.mail_id === id);
  assert.match(logged.msg, /mail written \(no SMTP_URL\): "Your Tono sign-in code: 246810" code 246810/);
});

test('a run of messages larger than a batch is sent once each, and their jobs are gone', async (t) => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tono-mail-'));
  t.after(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const app = await buildTestApp(t, { dataDir, smtpUrl: null, workers: true });
  const count = 600;
  const ids = await transact(app.deps.db, async (trx) => {
    const queued: string[] = [];
    for (let i = 0; i < count; i++)
      queued.push(
        (await queueMail(
          trx,
          {
            to: `p${i}@example.com`,
            template: 'consent_revoked',
            data: mailSamples.consent_revoked,
            dedupeKey: `run:${i}`,
          },
          0,
        ))!,
      );
    return queued;
  });
  for (let i = 0; i < 400; i++) {
    const sent = await app.deps.db
      .selectFrom('mail_messages')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('status', '=', 'sent')
      .executeTakeFirstOrThrow();
    if (Number(sent.n) === count) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const rows = await app.deps.db.selectFrom('mail_messages').select(['id', 'status', 'attempts']).execute();
  assert.equal(rows.length, count);
  assert.ok(
    rows.every((row) => row.status === 'sent' && Number(row.attempts) === 1),
    'every message sent on its first try',
  );
  assert.deepEqual(
    fs.readdirSync(path.join(dataDir, 'mail')).sort(),
    ids.map((id) => `${id}.eml`).sort(),
    'one file per message, none half-written',
  );
  const left = await app.deps.db.selectFrom('jobs').select('id').where('kind', '=', 'mail.send').execute();
  assert.equal(left.length, 0);
});

test("without SMTP_URL only the newest test-mode files of a merchant are kept; another merchant's, live and unowned mail are untouched", async (t) => {
  assert.equal(TEST_MAIL_KEPT, 200);
  const kept = 4;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tono-mail-'));
  t.after(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const app = await buildTestApp(t, { dataDir, smtpUrl: null });
  // The pay test helper reaches the sandbox bank over HTTP at the service's own address.
  app.deps.config.publicBaseUrl = (await app.app.listen({ port: 0, host: '127.0.0.1' })).replace(
    'localhost',
    '127.0.0.1',
  );
  const lines: string[] = [];
  const log = pino(
    { level: 'info' },
    new Writable({
      write(chunk, _e, done) {
        lines.push(String(chunk));
        done();
      },
    }),
  );
  // The app's own lane, with the sender keeping a few files rather than 200.
  const dispatcher = new MailDispatcher(app.deps, createMailSender(app.deps.config, log, { testMailKept: kept }));
  dispatcher.start();
  t.after(() => dispatcher.stop());

  const alice = await createTestMerchant(app);
  const bob = await createTestMerchant(app);
  for (const merchant of [alice, bob]) {
    const api = apiClient(app, merchant.testKey);
    const request = (
      await api.post('/v1/requests', {
        bank_account_id: merchant.bankAccountId,
        message: 'Weekly beans',
        subscription_options: { amount: '4.00 NZD', period: 'weekly' },
        cust_info: { email: 'pat@example.com' },
      })
    ).body.request;
    assert.equal((await api.post(`/v1/test-helpers/requests/${request.id}/pay`, {})).status, 200);
  }
  // ten weeks on alice's test clock: a receipt a week
  const advanced = await apiClient(app, alice.testKey).post('/v1/test-helpers/clock/advance', { seconds: 70 * 86_400 });
  assert.equal(advanced.status, 200, advanced.text);
  // live mail of alice's, more than `kept`, and a message that concerns no merchant
  await transact(app.deps.db, async (trx) => {
    for (let i = 0; i < kept + 2; i++) {
      await queueMail(
        trx,
        {
          to: `p${i}@example.com`,
          template: 'charge_receipt',
          data: mailSamples.charge_receipt,
          owner: { userId: alice.userId, mode: 'live' },
          dedupeKey: `live:${i}`,
        },
        Date.now(),
      );
    }
    await queueMail(
      trx,
      { to: 'p@example.com', template: 'payer_code', data: { code: '135790', minutes: 10 } },
      Date.now(),
      app.deps.secrets,
    );
  });

  let rows: Array<{ id: string; user_id: string | null; mode: string | null; status: string }> = [];
  for (let i = 0; i < 400; i++) {
    rows = (await app.deps.db.selectFrom('mail_messages').select(['id', 'user_id', 'mode', 'status']).execute()).sort(
      (a, b) => (a.id < b.id ? -1 : 1),
    );
    if (rows.every((row) => row.status === 'sent')) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.ok(
    rows.every((row) => row.status === 'sent'),
    'every message sent',
  );
  const files = (ids: string[]) => ids.map((id) => `${id}.eml`).sort();
  const idsOf = (userId: string | null, mode: string | null) =>
    rows.filter((row) => row.user_id === userId && row.mode === mode).map((row) => row.id);
  const list = (...parts: string[]) =>
    fs
      .readdirSync(path.join(dataDir, 'mail', ...parts))
      .filter((name) => name.endsWith('.eml'))
      .sort();

  const aliceTest = idsOf(alice.userId, 'test');
  assert.ok(aliceTest.length >= 10, `${aliceTest.length} test messages for alice`);
  assert.deepEqual(
    list('test', alice.userId),
    files(aliceTest.slice(-kept)),
    "the newest few of alice's test mail, no more",
  );
  const bobTest = idsOf(bob.userId, 'test');
  assert.ok(bobTest.length > 0 && bobTest.length < kept);
  assert.deepEqual(list('test', bob.userId), files(bobTest), "bob's test mail untouched");
  assert.deepEqual(
    list(),
    files([...idsOf(alice.userId, 'live'), ...idsOf(null, null)]),
    'live and unowned mail all kept, where it always was',
  );
  assert.equal(idsOf(alice.userId, 'live').length, kept + 2);
  assert.deepEqual(fs.readdirSync(path.join(dataDir, 'mail', 'test')).sort(), [alice.userId, bob.userId].sort());

  // the log says where each file went
  const logged = new Map(
    lines
      .map((line) => JSON.parse(line))
      .filter((line) => line.mail_id)
      .map((line) => [line.mail_id, line.file]),
  );
  const newest = aliceTest.at(-1)!;
  assert.equal(logged.get(newest), path.join(dataDir, 'mail', 'test', alice.userId, `${newest}.eml`));
  assert.ok(fs.existsSync(logged.get(newest)));
  assert.match(
    fs.readFileSync(logged.get(newest), 'utf8'),
    new RegExp(`^Message-ID: <${newest}@127\\.0\\.0\\.1>$`, 'mi'),
  );
  const live = idsOf(alice.userId, 'live')[0];
  assert.equal(logged.get(live), path.join(dataDir, 'mail', `${live}.eml`));
});

test('a message that cannot be sent is tried 12 times with growing gaps, then marked failed', async (t) => {
  const app = await buildTestApp(t);
  let offset = 0;
  const clock: Clock = { now: () => Date.now() + offset };
  const tries: number[] = [];
  const refusing: MailSender = {
    async send() {
      tries.push(clock.now());
      throw new Error('550 mailbox unavailable');
    },
    async close() {},
  };
  const dispatcher = new MailDispatcher({ ...app.deps, clock }, refusing);
  dispatcher.start();
  t.after(() => dispatcher.stop());
  const id = (await transact(app.deps.db, (trx) =>
    queueMail(trx, { to: 'gone@example.com', template: 'consent_revoked', data: mailSamples.consent_revoked }, 0),
  ))!;

  let row: any;
  for (let i = 0; i < 600; i++) {
    row = await app.deps.db.selectFrom('mail_messages').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    if (row.status === 'failed') break;
    const job = await app.deps.db
      .selectFrom('jobs')
      .select(['run_at', 'locked_by'])
      .where('kind', '=', 'mail.send')
      .executeTakeFirst();
    // Each retry waits its turn on the lane's clock; move that clock to it rather than wait.
    if (job && job.locked_by === null && job.run_at > clock.now()) offset += job.run_at - clock.now();
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.equal(row!.status, 'failed');
  assert.equal(Number(row!.attempts), 12);
  assert.equal(row!.last_error, '550 mailbox unavailable');
  assert.equal(tries.length, 12);
  const gaps = tries.slice(1).map((at, i) => at - tries[i]);
  assert.ok(
    gaps[0] >= 2_000 && gaps.every((gap, i) => i === 0 || gap >= gaps[i - 1]),
    `growing gaps from 2 s: ${gaps.join(', ')}`,
  );
  assert.equal(
    (await app.deps.db.selectFrom('jobs').select('id').where('kind', '=', 'mail.send').execute()).length,
    0,
    'no job left to try again',
  );
});

async function waitForRow(
  db: Awaited<ReturnType<typeof buildTestApp>>['deps']['db'],
  id: string,
  done: (row: any) => boolean,
) {
  for (let i = 0; i < 300; i++) {
    const row = await db.selectFrom('mail_messages').selectAll().where('id', '=', id).executeTakeFirst();
    if (row && done(row)) return row;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`mail ${id} did not reach the expected state`);
}
