import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { simpleParser, type AddressObject } from 'mailparser';
import pino from 'pino';
import { apiClient, buildTestApp, createTestMerchant } from '../../../test/helpers.ts';
import { smtpReceiver } from '../../../test/smtp.ts';
import { mailSamples } from '../../../test/support/mail-samples.ts';
import { NO_ORIGIN } from '../context.ts';
import { createOwnerMember, firstOwnerOf, removeMember } from '../team/team.service.ts';
import { transact } from '../../store/store.ts';
import { MailDispatcher } from './mail.dispatcher.ts';
import { createMailSender, queueMail } from './mail.service.ts';

// Test mode never emails anyone but the merchant's own people (docs/email.md, Transport): with
// SMTP_URL set, a merchant's test-mode message goes out by SMTP only to the merchant's account email
// or a team member's; to anyone else it is written to the merchant's test-mail folder, as without
// SMTP, and recorded sent. A test key cannot make the operator's relay write to strangers.

test("with SMTP_URL, a merchant's test-mode mail reaches only the merchant's own addresses; the rest is written to its test folder and recorded sent", async (t) => {
  const kept = 4;
  const smtp = await smtpReceiver(t);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tono-mail-'));
  t.after(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const app = await buildTestApp(t, { smtpUrl: smtp.url, dataDir });
  // The pay test helper reaches the sandbox bank over HTTP at the service's own address.
  app.deps.config.publicBaseUrl = (await app.app.listen({ port: 0, host: '127.0.0.1' })).replace(
    'localhost',
    '127.0.0.1',
  );
  // The app's own lane, with the sender keeping a few test-mode files rather than 200.
  const dispatcher = new MailDispatcher(
    app.deps,
    createMailSender(app.deps.config, pino({ level: 'silent' }), { testMailKept: kept }),
  );
  dispatcher.start();
  t.after(() => dispatcher.stop());

  const db = app.deps.db;
  const alice = await createTestMerchant(app);
  const bob = await createTestMerchant(app);
  const emailOf = async (userId: string) =>
    (await db.selectFrom('users').select('email').where('id', '=', userId).executeTakeFirstOrThrow()).email;
  const aliceEmail = await emailOf(alice.userId);
  const bobEmail = await emailOf(bob.userId);
  const now = app.deps.clock.now();
  const member = await createOwnerMember(db, {
    userId: alice.userId,
    email: 'Ana.Member@Example.com',
    passwordHash: 'unused',
    now,
  });
  const gone = await createOwnerMember(db, { userId: alice.userId, email: 'gone@example.com', passwordHash: 'x', now });
  const owner = (await firstOwnerOf(db, alice.userId))!;
  const actor = { userId: alice.userId, memberId: owner.id, email: owner.email, role: 'owner' as const };
  assert.equal(await removeMember(app.deps, { ...actor, origin: NO_ORIGIN }, gone.id), null);

  // The attack: a test key's subscriptions for a stranger, paid, and the test clock moved ten weeks
  // on, a receipt a week, each one to the stranger.
  const victim = 'victim@example.net';
  const api = apiClient(app, alice.testKey);
  const request = (
    await api.post('/v1/requests', {
      bank_account_id: alice.bankAccountId,
      message: 'Weekly beans',
      subscription_options: { amount: '4.00 NZD', period: 'weekly' },
      cust_info: { email: victim },
    })
  ).body.request;
  assert.equal((await api.post(`/v1/test-helpers/requests/${request.id}/pay`, {})).status, 200);
  const advanced = await api.post('/v1/test-helpers/clock/advance', { seconds: 70 * 86_400 });
  assert.equal(advanced.status, 200, advanced.text);

  // And one message of each kind, queued straight.
  const queue = (to: string, owner: { userId: string; mode: 'test' | 'live' } | null, key: string) =>
    transact(db, (trx) =>
      queueMail(
        trx,
        { to, template: 'charge_receipt', data: mailSamples.charge_receipt, owner, dedupeKey: key },
        Date.now(),
      ),
    ).then((id) => id!);
  const aliceTest = { userId: alice.userId, mode: 'test' as const };
  const toStranger = await queue('Stranger@Example.org', aliceTest, 'test-stranger');
  const toAccount = await queue(aliceEmail.toUpperCase(), aliceTest, 'test-account');
  const toMember = await queue(member.email, aliceTest, 'test-member');
  const toRemoved = await queue(gone.email, aliceTest, 'test-removed');
  const toOtherMerchant = await queue(bobEmail, aliceTest, 'test-other-merchant');
  const bobToOwn = await queue(bobEmail, { userId: bob.userId, mode: 'test' }, 'bob-test-own');
  const liveToStranger = await queue(victim, { userId: alice.userId, mode: 'live' }, 'live-stranger');
  const unowned = await transact(db, (trx) =>
    queueMail(
      trx,
      { to: victim, template: 'payer_code', data: { code: '135790', minutes: 10 } },
      Date.now(),
      app.deps.secrets,
    ),
  );

  let rows: Array<{ id: string; to_address: string; user_id: string | null; mode: string | null; status: string }> = [];
  for (let i = 0; i < 400; i++) {
    rows = await db.selectFrom('mail_messages').select(['id', 'to_address', 'user_id', 'mode', 'status']).execute();
    if (rows.every((row) => row.status === 'sent')) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.ok(
    rows.every((row) => row.status === 'sent'),
    `every message recorded sent: ${rows.filter((row) => row.status !== 'sent').map((row) => row.id)}`,
  );
  const bySmtp = [toAccount, toMember, bobToOwn, liveToStranger, unowned!];
  // The SMTP receiver has every message it will get once the last one is in.
  for (const id of bySmtp) await smtp.waitFor((mail) => mail.messageId === `<${id}@127.0.0.1>`);
  await new Promise((resolve) => setTimeout(resolve, 300));
  const received = smtp.messages.map((mail) => /^<(mail_[0-9A-Za-z]+)@/.exec(mail.messageId)?.[1]).sort();
  assert.deepEqual(received, [...bySmtp].sort(), 'by SMTP: only the merchants’ own addresses, live and unowned mail');
  assert.deepEqual(
    smtp.messages
      .filter((mail) => mail.to === victim)
      .map((mail) => mail.messageId)
      .sort(),
    [`<${liveToStranger}@127.0.0.1>`, `<${unowned}@127.0.0.1>`].sort(),
    'the stranger gets live mail and their own sign-in code, never test mail',
  );
  assert.equal(
    smtp.messages.find((mail) => mail.messageId === `<${toMember}@127.0.0.1>`)!.to,
    'ana.member@example.com',
  );

  // What stayed off SMTP is in alice's test folder, as it would be without SMTP: the newest `kept`.
  const heldBack = rows
    .filter((row) => row.user_id === alice.userId && row.mode === 'test' && !bySmtp.includes(row.id))
    .map((row) => row.id)
    .sort();
  const toVictim = rows.filter((row) => row.to_address === victim && row.mode === 'test');
  assert.ok(toVictim.length >= 10, `${toVictim.length} test-mode messages to the stranger`);
  assert.ok(heldBack.includes(toStranger) && heldBack.includes(toRemoved) && heldBack.includes(toOtherMerchant));
  const folder = path.join(dataDir, 'mail', 'test', alice.userId);
  assert.deepEqual(
    fs.readdirSync(folder).sort(),
    heldBack.slice(-kept).map((id) => `${id}.eml`),
    'the newest few of what was held back, no more',
  );
  const eml = fs.readFileSync(path.join(folder, `${toOtherMerchant}.eml`), 'utf8');
  assert.match(eml, new RegExp(`^Message-ID: <${toOtherMerchant}@127\\.0\\.0\\.1>$`, 'mi'));
  assert.match(eml, new RegExp(`^To: ${bobEmail.replace(/[.]/g, '\\.')}$`, 'mi'));
  assert.match(eml, /^Subject: .*Receipt/m);
  const newestToVictim = toVictim
    .map((row) => row.id)
    .sort()
    .at(-1)!;
  const receipt = await simpleParser(fs.readFileSync(path.join(folder, `${newestToVictim}.eml`)));
  assert.equal(receipt.messageId, `<${newestToVictim}@127.0.0.1>`);
  assert.equal((receipt.to as AddressObject).text, victim);
  assert.match(receipt.subject ?? '', /^\[Test\] Receipt: \$4\.00 to Test Merchant for “Weekly beans”$/);
  // Nothing else was written: live, unowned and the own addresses' mail went by SMTP only.
  assert.deepEqual(fs.readdirSync(path.join(dataDir, 'mail')), ['test']);
  assert.deepEqual(fs.readdirSync(path.join(dataDir, 'mail', 'test')), [alice.userId]);
});
