import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  addMember,
  dashWorld,
  logInAs,
  PASSWORD,
  textOf,
  type DashMerchant,
  type DashWorld,
} from '../../../test/dashboard.ts';
import { Browser } from '../../../test/payer.ts';
import { shiftedClock, systemClock } from '../../shared/time.ts';
import { chainCommitted } from '../audit/audit.service.ts';

// The Team page over HTTP on SQLite and PostgreSQL (docs/team.md): inviting by email, accepting
// from the emailed link (once, for 72 hours, limited per address), roles and who may change them,
// the last owner, removal that signs out at once, the support refund limit, another merchant's
// member or invitation as 404, CSRF and escaping.

type Signed = { browser: Browser; csrf: string };

async function signedIn(world: DashWorld, email: string, password = PASSWORD): Promise<Signed> {
  const browser = await logInAs(world, email, password);
  const page = await browser.request('/dashboard/team');
  assert.equal(page.status, 200, page.text);
  return { browser, csrf: Browser.csrfOf(page.text) };
}

const post = (who: Signed, path: string, form: Record<string, string> = {}) =>
  who.browser.request(path, { form: { csrf: who.csrf, ...form } });

/** Invites `email` as `role` from the page and returns the emailed link's path. */
async function invite(world: DashWorld, owner: Signed, email: string, role: string): Promise<string> {
  const sent = await post(owner, '/dashboard/team/invitations', { email, role });
  assert.equal(sent.status, 303, sent.text);
  assert.equal(sent.headers.get('location'), '/dashboard/team?done=invited');
  const mail = await world.smtp.waitFor((m) => m.to === email.toLowerCase() && /invited/.test(m.subject));
  return new RegExp(`${world.baseUrl}(/dashboard/invitations/[A-Za-z0-9_-]+)`).exec(mail.text)![1];
}

async function accept(world: DashWorld, link: string, name: string, password = PASSWORD) {
  const browser = new Browser(world.baseUrl);
  const page = await browser.request(link);
  assert.equal(page.status, 200, page.text);
  const done = await browser.request(link, { form: { csrf: Browser.csrfOf(page.text), name, password } });
  return { browser, page, done };
}

const memberIdOf = async (world: DashWorld, email: string) =>
  (
    await world.app.deps.db
      .selectFrom('members')
      .select('id')
      .where('email', '=', email)
      .where('removed_at', 'is', null)
      .executeTakeFirstOrThrow()
  ).id;

test('an owner invites a member, who joins from the emailed link, is signed in and listed with their role', async (t) => {
  const world = await dashWorld(t);
  const [kowhai] = world.merchants;
  const owner = await signedIn(world, kowhai.email);
  const link = await invite(world, owner, 'Aroha@Example.com', 'support');
  const tokenInDb = await world.app.deps.db.selectFrom('invitations').select('token_hash').executeTakeFirstOrThrow();
  assert.ok(!link.includes(tokenInDb.token_hash), 'the token is stored as its hash only');
  const listed = textOf((await owner.browser.request('/dashboard/team')).text);
  assert.match(listed, /Pending invitations Email Role Sent Works until Action aroha@example\.com Support/);

  const joined = await accept(world, link, 'Aroha <b>Ngata</b>');
  assert.match(textOf(joined.page.text), /You are invited as Support , with the email aroha@example\.com/);
  assert.equal(joined.done.status, 303, joined.done.text);
  assert.equal(joined.done.headers.get('location'), '/dashboard');
  const team = await joined.browser.request('/dashboard/team');
  assert.equal(team.status, 200);
  assert.ok(team.text.includes('Aroha &lt;b&gt;Ngata&lt;/b&gt;'), 'the name is escaped');
  assert.match(textOf(team.text), /aroha@example\.com you Aroha <b>Ngata<\/b> Support/);
  assert.ok(!team.text.includes('/dashboard/team/invitations"'), 'support sees no invite form');
  const account = textOf((await joined.browser.request('/dashboard/account')).text);
  assert.match(account, /Email aroha@example\.com Role support/);

  // The link works once.
  assert.equal((await new Browser(world.baseUrl).request(link)).status, 400);
  // The new member logs in with their own password, and resets it by email like anyone.
  await signedIn(world, 'aroha@example.com');
  assert.match(textOf((await owner.browser.request('/dashboard/team')).text), /Pending invitations None\./);
});

test('invitations: revoked or 72 hours old they no longer work; wrong tokens are limited per address; bad input changes nothing', async (t) => {
  const world = await dashWorld(t);
  const [kowhai] = world.merchants;
  const owner = await signedIn(world, kowhai.email);
  const revoked = await invite(world, owner, 'revoked@example.com', 'viewer');
  const { id } = await world.app.deps.db
    .selectFrom('invitations')
    .select('id')
    .where('email', '=', 'revoked@example.com')
    .executeTakeFirstOrThrow();
  const revoking = await post(owner, `/dashboard/team/invitations/${id}/revoke`);
  assert.equal(revoking.headers.get('location'), '/dashboard/team?done=revoked');
  assert.match(textOf((await new Browser(world.baseUrl).request(revoked)).text), /This invitation no longer works/);

  const late = await invite(world, owner, 'late@example.com', 'viewer');

  for (const [form, message] of [
    [{ email: 'not-an-email', role: 'viewer' }, /Enter their email address and choose a role\. Nothing was changed\./],
    [{ email: 'x@example.com', role: 'emperor' }, /Enter their email address and choose a role/],
    [{ email: kowhai.email, role: 'viewer' }, /is already on your team\. Nothing was changed\./],
  ] as const) {
    const refused = await post(owner, '/dashboard/team/invitations', form);
    assert.equal(refused.status, 400);
    assert.match(textOf(refused.text), message);
  }
  const noCsrf = await owner.browser.request('/dashboard/team/invitations', {
    form: { email: 'y@example.com', role: 'viewer' },
  });
  assert.equal(noCsrf.status, 403);
  assert.match(textOf(noCsrf.text), /This form has expired/);
  const invitations = await world.app.deps.db.selectFrom('invitations').select('email').execute();
  assert.deepEqual(invitations.map((row) => row.email).sort(), ['late@example.com', 'revoked@example.com']);

  // Another merchant's member is invited like anyone (the inviter does not learn where an email
  // signs in); the link tells its owner, and makes no member.
  const [, tui] = world.merchants;
  const theirs = await invite(world, owner, tui.email, 'viewer');
  const taken = await accept(world, theirs, 'Tūī');
  assert.equal(taken.done.status, 409);
  assert.match(textOf(taken.done.text), /already signs in to a Tono dashboard\. Log in with it\./);
  assert.equal(
    (await world.app.deps.db.selectFrom('members').select('id').where('email', '=', tui.email).execute()).length,
    1,
  );

  // Every look at a dead link counts against the address (20 in 15 minutes): one was above.
  const guesser = new Browser(world.baseUrl);
  const statuses: number[] = [];
  for (let i = 0; i < 20; i += 1)
    statuses.push((await guesser.request(`/dashboard/invitations/guess${String(i).padStart(20, '0')}`)).status);
  assert.deepEqual(statuses, [...Array(19).fill(400), 429], 'the 21st wrong token from one address is refused');

  // 72 hours on (the address's window long over), the invitation no longer works.
  world.app.deps.clock = shiftedClock(systemClock, 72 * 60 * 60_000 + 60_000);
  t.after(() => void (world.app.deps.clock = systemClock));
  assert.equal((await new Browser(world.baseUrl).request(late)).status, 400);
  world.app.deps.clock = systemClock;
});

test('roles: admins cannot make or unmake owners, the last owner stays, a role change applies at the next page', async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai] = world.merchants;
  const owner = await signedIn(world, kowhai.email);
  const ownerId = await memberIdOf(world, kowhai.email);
  const adminMember = await addMember(world, kowhai, 'admin');
  const viewerMember = await addMember(world, kowhai, 'viewer');
  const admin = await signedIn(world, adminMember.email);
  const viewer = await signedIn(world, viewerMember.email);

  const refusals: Array<[Signed, string, Record<string, string>, RegExp]> = [
    [
      admin,
      `/dashboard/team/members/${viewerMember.id}/role`,
      { role: 'owner' },
      /Only an owner can make a member an owner/,
    ],
    [
      admin,
      `/dashboard/team/members/${ownerId}/role`,
      { role: 'viewer' },
      /Only an owner can make a member an owner, or change an owner’s role/,
    ],
    [admin, `/dashboard/team/members/${ownerId}/remove`, {}, /Only an owner can remove an owner/],
    [
      owner,
      `/dashboard/team/members/${ownerId}/role`,
      { role: 'admin' },
      /The team’s last owner cannot be given another role/,
    ],
    [owner, `/dashboard/team/members/${ownerId}/remove`, {}, /The team’s last owner cannot be removed/],
    [
      admin,
      '/dashboard/team/invitations',
      { email: 'o@example.com', role: 'owner' },
      /Only an owner can invite another owner/,
    ],
  ];
  for (const [who, path, form, message] of refusals) {
    const refused = await post(who, path, form);
    assert.equal(refused.status, 400, `${path} ${refused.text.slice(0, 200)}`);
    assert.match(textOf(refused.text), message);
  }
  const roles = await world.app.deps.db
    .selectFrom('members')
    .select(['email', 'role'])
    .where('user_id', '=', kowhai.userId)
    .execute();
  assert.deepEqual(new Set(roles.map((r) => r.role)), new Set(['owner', 'admin', 'viewer']), 'nothing changed');

  // The pages offer a role only what it can do; the server refuses the rest.
  const requestsOf = async (who: Signed) => (await who.browser.request('/dashboard/test/requests')).text;
  assert.ok((await requestsOf(owner)).includes('/requests/new">New request'));
  assert.ok(!(await requestsOf(viewer)).includes('/requests/new">New request'));
  assert.ok(!(await viewer.browser.request('/dashboard/test/api-keys')).text.includes('Create a test key'));
  assert.ok(!(await viewer.browser.request('/dashboard/test/clock')).text.includes('Move the clock'));
  assert.ok((await owner.browser.request('/dashboard/test/clock')).text.includes('Move the clock'));

  // The viewer's action is refused with 403; once an admin makes them a developer it is allowed.
  const keys = `/dashboard/test/api-keys`;
  const before = await post(viewer, keys);
  assert.equal(before.status, 403);
  assert.match(textOf(before.text), /Your role does not allow this You are signed in as Viewer/);
  assert.equal(
    (await world.app.deps.db.selectFrom('api_keys').select('id').where('user_id', '=', kowhai.userId).execute()).length,
    2,
  );
  assert.equal(
    (await post(admin, `/dashboard/team/members/${viewerMember.id}/role`, { role: 'developer' })).status,
    303,
  );
  assert.equal(
    (await post(viewer, keys, { name: 'Shop server', access: 'full' })).status,
    303,
    'the new role applies to the session at once',
  );

  // An owner makes another owner, after which the first can step down.
  assert.equal((await post(owner, `/dashboard/team/members/${adminMember.id}/role`, { role: 'owner' })).status, 303);
  assert.equal((await post(owner, `/dashboard/team/members/${ownerId}/role`, { role: 'admin' })).status, 303);
  assert.match(textOf((await owner.browser.request('/dashboard/account')).text), /Role admin/);
});

test('removing a member signs them out at their next request; another merchant’s member or invitation is 404', async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai, tui] = world.merchants;
  const owner = await signedIn(world, kowhai.email);
  const gone = await addMember(world, kowhai, 'developer');
  const goneSession = await signedIn(world, gone.email);
  const confirm = await owner.browser.request(`/dashboard/team/members/${gone.id}/remove`);
  assert.match(textOf(confirm.text), new RegExp(`Remove ${gone.email.replace('.', '\\.')} from the team\\?`));
  const removed = await post(owner, `/dashboard/team/members/${gone.id}/remove`);
  assert.equal(removed.headers.get('location'), '/dashboard/team?done=removed');
  const next = await goneSession.browser.request('/dashboard/test');
  assert.equal(next.status, 303);
  assert.match(next.headers.get('location')!, /^\/dashboard\/login/);
  const again = await new Browser(world.baseUrl).request('/dashboard/login');
  const login = await new Browser(world.baseUrl).request('/dashboard/login', {
    form: { email: gone.email, password: PASSWORD, csrf: Browser.csrfOf(again.text) },
  });
  assert.notEqual(login.status, 303, 'a removed member cannot log in');
  assert.ok(!textOf((await owner.browser.request('/dashboard/team')).text).includes(gone.email));

  const tuiOwner = await signedIn(world, tui.email);
  const kowhaiMember = await addMember(world, kowhai, 'viewer');
  await post(owner, '/dashboard/team/invitations', { email: 'someone@example.com', role: 'viewer' });
  const { id: invitationId } = await world.app.deps.db.selectFrom('invitations').select('id').executeTakeFirstOrThrow();
  for (const [path, form] of [
    [`/dashboard/team/members/${kowhaiMember.id}/role`, { role: 'admin' }],
    [`/dashboard/team/members/${kowhaiMember.id}/remove`, {}],
    [`/dashboard/team/invitations/${invitationId}/revoke`, {}],
  ] as const) {
    const response = await post(tuiOwner, path, form);
    assert.equal(response.status, 404, path);
  }
  assert.equal((await tuiOwner.browser.request(`/dashboard/team/members/${kowhaiMember.id}/remove`)).status, 404);
  const still = await world.app.deps.db
    .selectFrom('members')
    .select(['role', 'removed_at'])
    .where('id', '=', kowhaiMember.id)
    .executeTakeFirstOrThrow();
  assert.deepEqual([still.role, still.removed_at], ['viewer', null]);
  const pending = await world.app.deps.db.selectFrom('invitations').select('revoked_at').executeTakeFirstOrThrow();
  assert.equal(pending.revoked_at, null);
});

async function paidPayment(merchant: DashMerchant, amount: string) {
  const request = (
    await merchant.test.post('/v1/requests', { bank_account_id: merchant.bankAccountId, message: 'Cups', amount })
  ).body.request;
  const paid = await merchant.test.post(`/v1/test-helpers/requests/${request.id}/pay`, {
    cust_info: { email: 'pat@example.com' },
  });
  assert.equal(paid.body.payment.status, 'successful');
  return paid.body.payment as { id: string };
}

test('support refunds up to the limit an owner sets, on the review and on the confirmation', async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai] = world.merchants;
  const owner = await signedIn(world, kowhai.email);
  const support = await signedIn(world, (await addMember(world, kowhai, 'support')).email);
  const payment = await paidPayment(kowhai, '20.00 NZD');
  const refund = `/dashboard/test/payments/${payment.id}/refund`;
  const supportCsrf = Browser.csrfOf((await support.browser.request(refund)).text);

  const none = await support.browser.request(refund, { form: { csrf: supportCsrf, amount: '1.00', reason: '' } });
  assert.equal(none.status, 400);
  assert.match(textOf(none.text), /As Support you can refund at most \$0\.00 at once\. Nothing was refunded\./);

  assert.equal((await post(owner, '/dashboard/team/refund-limit', { limit: 'lots' })).status, 400);
  const set = await post(owner, '/dashboard/team/refund-limit', { limit: '5.00' });
  assert.equal(set.headers.get('location'), '/dashboard/team?done=limit');
  assert.match(textOf((await support.browser.request('/dashboard/team')).text), /The support refund limit is \$5\.00/);

  const over = await support.browser.request(refund, { form: { csrf: supportCsrf, amount: '5.01', reason: '' } });
  assert.equal(over.status, 400);
  assert.match(textOf(over.text), /at most \$5\.00 at once/);
  // The confirmation is checked again: a hand-made post over the limit refunds nothing.
  const forged = await support.browser.request(`${refund}/confirm`, {
    form: {
      csrf: supportCsrf,
      amount: '6.00',
      reason: '',
      idempotency_key: 'dashboard-8f7c1a52-6a5e-4a8e-9b59-3c7e0e6b2f10',
    },
  });
  assert.equal(forged.status, 400);
  assert.match(textOf(forged.text), /at most \$5\.00 at once/);
  const review = await support.browser.request(refund, { form: { csrf: supportCsrf, amount: '5.00', reason: '' } });
  assert.equal(review.status, 200, review.text);
  const key = /name="idempotency_key" value="([^"]+)"/.exec(review.text)![1];
  const made = await support.browser.request(`${refund}/confirm`, {
    form: { csrf: supportCsrf, amount: '5.00', reason: '', idempotency_key: key },
  });
  assert.equal(made.status, 303, made.text);
  const refunds = (await kowhai.test.get('/v1/refunds', { query: { payment_id: payment.id } })).body.refunds as any[];
  assert.deepEqual(
    refunds.map((r) => r.amount.value),
    ['5.00 NZD'],
  );
  // An owner refunds beyond the support limit.
  const ownerReview = await post(owner, refund, { amount: '10.00', reason: '' });
  assert.equal(ownerReview.status, 200);
});

test('the audit trail records sign-ins, failed sign-ins, invitations, joins, role changes, removals and the refund limit, by member and address', async (t) => {
  const world = await dashWorld(t);
  const [kowhai, tui] = world.merchants;
  const wrong = new Browser(world.baseUrl);
  const login = await wrong.request('/dashboard/login');
  await wrong.request('/dashboard/login', {
    form: { email: kowhai.email, password: 'not the password', csrf: Browser.csrfOf(login.text) },
  });
  const owner = await signedIn(world, kowhai.email);
  const ownerId = await memberIdOf(world, kowhai.email);
  const link = await invite(world, owner, 'rua@example.com', 'viewer');
  assert.equal((await accept(world, link, 'Rua')).done.status, 303);
  const ruaId = await memberIdOf(world, 'rua@example.com');
  assert.equal((await post(owner, `/dashboard/team/members/${ruaId}/role`, { role: 'support' })).status, 303);
  assert.equal((await post(owner, '/dashboard/team/refund-limit', { limit: '25.00' })).status, 303);
  assert.equal((await post(owner, `/dashboard/team/members/${ruaId}/remove`)).status, 303);
  // a refused change leaves no record
  assert.equal((await post(owner, `/dashboard/team/members/${ownerId}/remove`)).status, 400);

  await chainCommitted(world.app.deps.db);
  const records = await world.app.deps.db
    .selectFrom('audit_events')
    .selectAll()
    .where('user_id', '=', kowhai.userId)
    .where('action', 'like', '%.%')
    .where('action', 'not in', ['merchant.create', 'api_key.create', 'bank_account.create'])
    .orderBy('seq')
    .execute();
  const invitationId = (await world.app.deps.db.selectFrom('invitations').select('id').executeTakeFirstOrThrow()).id;
  assert.deepEqual(
    records.map((r) => [r.action, r.actor_kind, r.actor_id, r.object_id, r.mode]),
    [
      ['member.sign_in_failed', 'member', ownerId, ownerId, null],
      ['member.sign_in', 'member', ownerId, ownerId, null],
      ['invitation.create', 'member', ownerId, invitationId, null],
      ['member.join', 'member', ruaId, ruaId, null],
      ['member.sign_in', 'member', ruaId, ruaId, null],
      ['member.role_change', 'member', ownerId, ruaId, null],
      ['team.support_refund_limit', 'member', ownerId, kowhai.userId, null],
      ['member.remove', 'member', ownerId, ruaId, null],
    ],
  );
  assert.deepEqual(JSON.parse(records[5].summary), { email: 'rua@example.com', from: 'viewer', to: 'support' });
  assert.ok(
    records.every((r) => r.ip && r.request_id),
    'each from an address, with its request',
  );
  assert.ok(records.every((r) => !r.summary.includes(PASSWORD) && !r.summary.includes('not the password')));
  // nothing of this reaches another merchant's trail
  assert.equal(
    (
      await world.app.deps.db
        .selectFrom('audit_events')
        .select('id')
        .where('user_id', '=', tui.userId)
        .where('action', 'like', 'member.%')
        .execute()
    ).length,
    0,
  );
});

test('an invitation works only while its sender may send it: removing them revokes what they sent, a role change what the new role cannot send', async (t) => {
  const world = await dashWorld(t);
  const [kowhai] = world.merchants;
  const db = world.app.deps.db;
  const owner = await signedIn(world, kowhai.email);
  const invitationOf = (email: string) =>
    db.selectFrom('invitations').selectAll().where('email', '=', email).executeTakeFirstOrThrow();
  const dead = async (link: string) => {
    const page = await new Browser(world.baseUrl).request(link);
    assert.equal(page.status, 400);
    assert.match(textOf(page.text), /This invitation no longer works/);
  };

  // An admin invites another address of theirs as admin, and is removed before accepting it: the
  // link dies with them, even where its page was already open.
  const leaving = await addMember(world, kowhai, 'admin');
  const admin = await signedIn(world, leaving.email);
  const comeback = await invite(world, admin, 'comeback@example.com', 'admin');
  const opened = new Browser(world.baseUrl);
  const form = await opened.request(comeback);
  assert.equal(form.status, 200);
  assert.equal((await post(owner, `/dashboard/team/members/${leaving.id}/remove`)).status, 303);
  assert.notEqual((await invitationOf('comeback@example.com')).revoked_at, null, 'revoked with the removal');
  await dead(comeback);
  const late = await opened.request(comeback, {
    form: { csrf: Browser.csrfOf(form.text), name: 'Back again', password: PASSWORD },
  });
  assert.equal(late.status, 400);
  assert.match(textOf(late.text), /This invitation no longer works/);
  assert.equal(opened.cookie('tono_dash'), undefined);
  // Checked again at the link: an invitation of a removed sender left unrevoked is dead as well.
  await db.updateTable('invitations').set({ revoked_at: null }).where('email', '=', 'comeback@example.com').execute();
  await dead(comeback);

  // An owner stepped down to admin: their owner invitation dies, their viewer invitation still works.
  const coOwner = await addMember(world, kowhai, 'owner');
  const co = await signedIn(world, coOwner.email);
  const asOwner = await invite(world, co, 'owner-to-be@example.com', 'owner');
  const asViewer = await invite(world, co, 'viewer-to-be@example.com', 'viewer');
  assert.equal((await post(owner, `/dashboard/team/members/${coOwner.id}/role`, { role: 'admin' })).status, 303);
  await dead(asOwner);
  const { revoked_at } = await invitationOf('owner-to-be@example.com');
  await db
    .updateTable('invitations')
    .set({ revoked_at: null })
    .where('email', '=', 'owner-to-be@example.com')
    .execute();
  await dead(asOwner);
  await db.updateTable('invitations').set({ revoked_at }).where('email', '=', 'owner-to-be@example.com').execute();
  const viewerJoined = await accept(world, asViewer, 'Viewer');
  assert.equal(viewerJoined.done.status, 303, 'an admin may still invite a viewer');

  // Demoted to viewer, they may invite nobody: everything they sent dies.
  const asDeveloper = await invite(world, co, 'dev-to-be@example.com', 'developer');
  const page = await new Browser(world.baseUrl).request(asDeveloper);
  assert.equal(page.status, 200);
  assert.equal((await post(owner, `/dashboard/team/members/${coOwner.id}/role`, { role: 'viewer' })).status, 303);
  await dead(asDeveloper);

  const joined = await db
    .selectFrom('members')
    .select('email')
    .where('email', 'in', ['comeback@example.com', 'owner-to-be@example.com', 'dev-to-be@example.com'])
    .execute();
  assert.deepEqual(joined, [], 'no dead link made a member');
  // Each revocation is recorded by who made the change, with why.
  await chainCommitted(db);
  const revocations = await db
    .selectFrom('audit_events')
    .select(['actor_id', 'summary'])
    .where('user_id', '=', kowhai.userId)
    .where('action', '=', 'invitation.revoke')
    .orderBy('seq')
    .execute();
  const ownerId = await memberIdOf(world, kowhai.email);
  assert.deepEqual(
    revocations.map((r) => [r.actor_id, JSON.parse(r.summary)]),
    [
      [ownerId, { email: 'comeback@example.com', role: 'admin', reason: 'member.remove' }],
      [ownerId, { email: 'owner-to-be@example.com', role: 'owner', reason: 'member.role_change' }],
      [ownerId, { email: 'dev-to-be@example.com', role: 'developer', reason: 'member.role_change' }],
    ],
  );
});

test('a refused acceptance changes nothing: the link still works once the email is free', async (t) => {
  const world = await dashWorld(t);
  const [kowhai, tui] = world.merchants;
  const db = world.app.deps.db;
  const owner = await signedIn(world, kowhai.email);
  const elsewhere = await addMember(world, tui, 'viewer');
  const link = await invite(world, owner, elsewhere.email, 'support');

  const refused = await accept(world, link, 'Moving');
  assert.equal(refused.done.status, 409);
  assert.match(textOf(refused.done.text), /already signs in to a Tono dashboard/);
  const invitation = await db
    .selectFrom('invitations')
    .select(['accepted_at', 'revoked_at'])
    .where('email', '=', elsewhere.email)
    .executeTakeFirstOrThrow();
  assert.deepEqual(invitation, { accepted_at: null, revoked_at: null }, 'not spent');
  assert.match(textOf((await owner.browser.request('/dashboard/team')).text), /Pending invitations .*viewer-/);

  // Once the other team removes them, the same link makes them a member of this one.
  const tuiOwner = await signedIn(world, tui.email);
  assert.equal((await post(tuiOwner, `/dashboard/team/members/${elsewhere.id}/remove`)).status, 303);
  const joined = await accept(world, link, 'Moving');
  assert.equal(joined.done.status, 303, joined.done.text);
  const member = await db
    .selectFrom('members')
    .select(['user_id', 'role'])
    .where('email', '=', elsewhere.email)
    .where('removed_at', 'is', null)
    .executeTakeFirstOrThrow();
  assert.deepEqual(member, { user_id: kowhai.userId, role: 'support' });
});

test('one email accepting two teams’ invitations at once joins one, and the other is refused as taken', async (t) => {
  const world = await dashWorld(t);
  const [kowhai, tui] = world.merchants;
  const email = 'both-teams@example.com';
  const first = await invite(world, await signedIn(world, kowhai.email), email, 'support');
  const sent = await post(await signedIn(world, tui.email), '/dashboard/team/invitations', { email, role: 'viewer' });
  assert.equal(sent.status, 303, sent.text);
  const mail = await world.smtp.waitFor((m) => m.to === email && /invited/.test(m.subject) && !m.text.includes(first));
  const links = [first, new RegExp(`${world.baseUrl}(/dashboard/invitations/[A-Za-z0-9_-]+)`).exec(mail.text)![1]!];
  const pages = await Promise.all(
    links.map(async (link) => {
      const browser = new Browser(world.baseUrl);
      const page = await browser.request(link);
      assert.equal(page.status, 200, page.text);
      return { browser, link, csrf: Browser.csrfOf(page.text) };
    }),
  );
  const done = await Promise.all(
    pages.map(({ browser, link, csrf }) => browser.request(link, { form: { csrf, name: 'Both', password: PASSWORD } })),
  );
  assert.deepEqual(
    done.map((reply) => reply.status).sort(),
    [303, 409],
    done.map((reply) => textOf(reply.text)).join('\n'),
  );
  const members = await world.app.deps.db
    .selectFrom('members')
    .select('user_id')
    .where('email', '=', email)
    .where('removed_at', 'is', null)
    .execute();
  assert.equal(members.length, 1);
  const unspent = await world.app.deps.db
    .selectFrom('invitations')
    .select('id')
    .where('email', '=', email)
    .where('accepted_at', 'is', null)
    .execute();
  assert.equal(unspent.length, 1, 'the refused link is not spent');
});
