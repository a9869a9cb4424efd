import { test } from 'node:test';
import assert from 'node:assert/strict';
import { addMember, dashWorld, logIn, logInAs, textOf } from '../../../test/dashboard.ts';
import { Browser } from '../../../test/payer.ts';
import { chainCommitted } from '../audit/audit.service.ts';
import { createOwnerMember } from '../team/team.service.ts';

// Emails to a payer sent again from the dashboard (docs/email.md, "Sending an email again"), over
// HTTP on SQLite and PostgreSQL with a real SMTP receiver: the consent page lists what the payer was
// sent; support sends one again and it arrives, once per minute however often it is posted; the
// resend is in the audit trail; a viewer cannot; another merchant's message, or one that carries a
// secret, is not found.

async function signedIn(world: Awaited<ReturnType<typeof dashWorld>>, email: string, path: string) {
  const browser = await logInAs(world, email);
  const page = await browser.request(path);
  assert.equal(page.status, 200, page.text);
  return { browser, page, csrf: Browser.csrfOf(page.text) };
}

/** Test mode emails only the merchant's own people (docs/email.md, Transport): the payer joins its team. */
async function payerOnTheTeam(world: Awaited<ReturnType<typeof dashWorld>>, userId: string) {
  await createOwnerMember(world.app.deps.db, {
    userId,
    email: 'pat@example.com',
    passwordHash: 'unused',
    now: Date.now(),
  });
}

test('support sends a consent email to the payer again; it arrives once per minute, is audited, and is no one else’s to send', async (t) => {
  const world = await dashWorld(t);
  const [merchant, other] = world.merchants;
  await payerOnTheTeam(world, merchant.userId);
  const request = (
    await merchant.test.post('/v1/requests', {
      bank_account_id: merchant.bankAccountId,
      message: 'Top-ups <b>',
      recurring_options: { period: 'weekly', max_per_period: '100.00 NZD' },
      cust_info: { email: 'Pat@Example.com' },
    })
  ).body.request;
  const consent = (await merchant.test.post(`/v1/test-helpers/requests/${request.id}/pay`, {})).body.recurring_consent;
  const first = await world.smtp.waitFor(
    (m) => m.to === 'pat@example.com' && /You authorised payments/.test(m.subject),
  );
  const page = `/dashboard/test/recurring-consents/${consent.id}`;
  const messageId = (
    await world.app.deps.db
      .selectFrom('mail_messages')
      .select('id')
      .where('related_id', '=', consent.id)
      .executeTakeFirstOrThrow()
  ).id;

  const viewer = await signedIn(world, (await addMember(world, merchant, 'viewer')).email, page);
  assert.match(
    textOf(viewer.page.text),
    /Emails to the payer .*You authorised payments to Kōwhai Coffee for “Top-ups <b>” pat@example\.com sent/,
  );
  assert.doesNotMatch(viewer.page.text, /<b>/, 'the subject is escaped');
  assert.doesNotMatch(viewer.page.text, /Send again/, 'a viewer is offered no resend');
  const refused = await viewer.browser.request(`/dashboard/test/emails/${messageId}/resend`, {
    form: { csrf: viewer.csrf },
  });
  assert.equal(refused.status, 403);

  const support = await signedIn(world, (await addMember(world, merchant, 'support')).email, page);
  assert.match(support.page.text, new RegExp(`action="/dashboard/test/emails/${messageId}/resend"`));
  const back = `recurring-consents/${consent.id}`;
  assert.match(support.page.text, new RegExp(`name="back" value="${back}"`));
  const resent = await support.browser.request(`/dashboard/test/emails/${messageId}/resend`, {
    form: { csrf: support.csrf, back },
  });
  assert.equal(resent.status, 303, resent.text);
  assert.equal(resent.headers.get('location'), `${page}?emailed=sent#emails`);
  await world.smtp.waitFor(
    (m) => m.to === 'pat@example.com' && m.subject === first.subject && m.messageId !== first.messageId,
  );
  const again = world.smtp.messages.filter((m) => m.subject === first.subject);
  assert.equal(again.length, 2);
  assert.equal(
    again[1]!.text,
    again[0]!.text.replace(first.messageId, again[1]!.messageId),
    'the copy says what the first said',
  );

  // Posted again in the same minute: nothing more is queued, and the page says why.
  const twice = await support.browser.request(`/dashboard/test/emails/${messageId}/resend`, {
    form: { csrf: support.csrf, back },
  });
  assert.equal(twice.headers.get('location'), `${page}?emailed=recent#emails`);
  const rows = await world.app.deps.db
    .selectFrom('mail_messages')
    .select('id')
    .where('related_id', '=', consent.id)
    .execute();
  assert.equal(rows.length, 2);
  const shown = await support.browser.request(`${page}?emailed=recent`);
  assert.match(textOf(shown.text), /sent again less than a minute ago/);
  assert.equal((shown.text.match(/Send again/g) ?? []).length, 2, 'the copy is listed beside the first');

  const supportId = (
    await world.app.deps.db
      .selectFrom('members')
      .select('id')
      .where('email', 'like', 'support-%')
      .executeTakeFirstOrThrow()
  ).id;
  await chainCommitted(world.app.deps.db);
  const audit = await world.app.deps.db
    .selectFrom('audit_events')
    .selectAll()
    .where('action', '=', 'email.resend')
    .execute();
  assert.equal(audit.length, 1, 'one record: the post that queued nothing made none');
  assert.equal(audit[0]!.object_id, consent.id);
  assert.equal(audit[0]!.actor_kind, 'member');
  assert.equal(audit[0]!.actor_id, supportId);
  assert.deepEqual(
    { ...JSON.parse(audit[0]!.summary), copy: undefined },
    { message: messageId, copy: undefined, to: 'pat@example.com', template: 'consent_authorised' },
  );

  // Another merchant's owner, and the other mode, cannot reach the message.
  const stranger = await logIn(world, other);
  const home = await stranger.request('/dashboard/test');
  const strangerCsrf = Browser.csrfOf(home.text);
  for (const mode of ['test', 'live'])
    assert.equal(
      (await stranger.request(`/dashboard/${mode}/emails/${messageId}/resend`, { form: { csrf: strangerCsrf } }))
        .status,
      404,
    );
  assert.equal(
    (await support.browser.request(`/dashboard/live/emails/${messageId}/resend`, { form: { csrf: support.csrf } }))
      .status,
    404,
  );

  // A message with a secret in it (an invitation's link) is never sent again, even by an owner.
  const owner = await logIn(world, merchant);
  const team = await owner.request('/dashboard/team');
  await owner.request('/dashboard/team/invitations', {
    form: { csrf: Browser.csrfOf(team.text), email: 'new@example.com', role: 'viewer' },
  });
  const invitation = await world.app.deps.db
    .selectFrom('mail_messages')
    .select('id')
    .where('template', '=', 'team_invitation')
    .executeTakeFirstOrThrow();
  const ownerPage = await owner.request(page);
  assert.equal(
    (
      await owner.request(`/dashboard/test/emails/${invitation.id}/resend`, {
        form: { csrf: Browser.csrfOf(ownerPage.text) },
      })
    ).status,
    404,
  );
});

test('a payment’s receipt email is listed on its page and sent again from there', async (t) => {
  const world = await dashWorld(t);
  const [merchant] = world.merchants;
  await payerOnTheTeam(world, merchant.userId);
  const settings = await merchant.live.post('/v1/tax-settings', {
    legal_name: 'Kōwhai Coffee Limited',
    gst_number: null,
    prices_include_gst: true,
    issue_tax_invoices: false,
    email_receipts: true,
  });
  assert.equal(settings.status, 200, settings.text);
  const request = (
    await merchant.test.post('/v1/requests', {
      bank_account_id: merchant.bankAccountId,
      message: 'Flat white',
      amount: '5.50 NZD',
    })
  ).body.request;
  const payment = (
    await merchant.test.post(`/v1/test-helpers/requests/${request.id}/pay`, { cust_info: { email: 'pat@example.com' } })
  ).body.payment;
  const first = await world.smtp.waitFor((m) => m.to === 'pat@example.com' && /Receipt|receipt/.test(m.subject));
  const page = `/dashboard/test/payments/${payment.id}`;
  const support = await signedIn(world, (await addMember(world, merchant, 'support')).email, page);
  assert.match(
    textOf(support.page.text),
    new RegExp(`Emails to the payer .*${first.subject.replace('[Test] ', '').replace(/[[\]().$]/g, '\\$&')}`),
  );
  const id = /action="\/dashboard\/test\/emails\/(mail_[0-9A-Z]+)\/resend"/.exec(support.page.text)![1];
  const resent = await support.browser.request(`/dashboard/test/emails/${id}/resend`, {
    form: { csrf: support.csrf, back: `payments/${payment.id}` },
  });
  assert.equal(resent.status, 303, resent.text);
  assert.equal(resent.headers.get('location'), `${page}?emailed=sent#emails`);
  await world.smtp.waitFor((m) => m.subject === first.subject && m.messageId !== first.messageId);
  // A "back" that is not an object's page is not followed.
  await new Promise((resolve) => setTimeout(resolve, 10));
  const elsewhere = await support.browser.request(`/dashboard/test/emails/${id}/resend`, {
    form: { csrf: support.csrf, back: '//evil.example/x' },
  });
  assert.equal(elsewhere.status, 200);
  assert.match(textOf(elsewhere.text), /sent again less than a minute ago/);
});
