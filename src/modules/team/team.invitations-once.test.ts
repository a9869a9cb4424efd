import { test } from 'node:test';
import assert from 'node:assert/strict';
import { dashWorld, logInAs, PASSWORD, textOf, type DashWorld } from '../../../test/dashboard.ts';
import { Browser } from '../../../test/payer.ts';
import { randomSecret, sha256Hex } from '../../shared/crypto.ts';
import { chainCommitted } from '../audit/audit.service.ts';
import { INVITATION_REPEAT_WINDOW_MS, INVITATION_TTL_MS } from './team.service.ts';

// One live invitation per email and team, on SQLite and PostgreSQL (docs/team.md, "Invitations"):
// an invitation posted twice leaves one link that works; joining through one invitation revokes the
// team's others to that email; removing a member revokes the invitations addressed to them, so no
// link sent before the removal brings them back.

type Signed = { browser: Browser; csrf: string };

async function signedIn(world: DashWorld, email: string): Promise<Signed> {
  const browser = await logInAs(world, email);
  return { browser, csrf: Browser.csrfOf((await browser.request('/dashboard/team')).text) };
}

const linkOf = (world: DashWorld, text: string) =>
  new RegExp(`${world.baseUrl}(/dashboard/invitations/[A-Za-z0-9_-]+)`).exec(text)![1]!;

/** Opens a link and, when it works, joins through it; the reply to the join, or the page that refused. */
async function join(world: DashWorld, link: string, name: string) {
  const browser = new Browser(world.baseUrl);
  const page = await browser.request(link);
  if (page.status !== 200) return page;
  return browser.request(link, { form: { csrf: Browser.csrfOf(page.text), name, password: PASSWORD } });
}

const liveInvitationsTo = (world: DashWorld, email: string) =>
  world.app.deps.db
    .selectFrom('invitations')
    .select(['id', 'role'])
    .where('email', '=', email)
    .where('accepted_at', 'is', null)
    .where('revoked_at', 'is', null)
    .execute();

const liveMemberId = async (world: DashWorld, email: string) =>
  (
    await world.app.deps.db
      .selectFrom('members')
      .select('id')
      .where('email', '=', email)
      .where('removed_at', 'is', null)
      .executeTakeFirst()
  )?.id ?? null;

/** A pending invitation written straight into the table, as one made before this rule held; its link. */
async function invitationMadeEarlier(world: DashWorld, userId: string, email: string, invitedBy: string) {
  const token = randomSecret(32);
  const now = world.app.deps.clock.now();
  await world.app.deps.db
    .insertInto('invitations')
    .values({
      id: `inv_EARLIER${randomSecret(8).replace(/[^A-Za-z0-9]/g, 'x')}`,
      token_hash: sha256Hex(token),
      user_id: userId,
      email,
      role: 'admin',
      invited_by: invitedBy,
      created_at: now - 1000,
      expires_at: now + INVITATION_TTL_MS,
      accepted_at: null,
      revoked_at: null,
    })
    .execute();
  return `/dashboard/invitations/${token}`;
}

test('an invitation posted twice at once is one invitation and one email; after joining and being removed, no link brings the member back', async (t) => {
  const world = await dashWorld(t);
  const [kowhai] = world.merchants;
  const owner = await signedIn(world, kowhai.email);
  const email = 'aroha@example.com';
  const form = { csrf: owner.csrf, email, role: 'admin' };
  const posts = await Promise.all([
    owner.browser.request('/dashboard/team/invitations', { form }),
    owner.browser.request('/dashboard/team/invitations', { form }),
  ]);
  assert.deepEqual(
    posts.map((p) => [p.status, p.headers.get('location')]),
    [
      [303, '/dashboard/team?done=invited'],
      [303, '/dashboard/team?done=invited'],
    ],
  );
  const live = await liveInvitationsTo(world, email);
  assert.equal(live.length, 1, 'one live invitation');
  const listed = textOf((await owner.browser.request('/dashboard/team')).text);
  assert.equal(listed.match(/aroha@example\.com Admin/g)?.length, 1, 'listed once');
  const mails = await world.app.deps.db
    .selectFrom('mail_messages')
    .select('related_id')
    .where('to_address', '=', email)
    .execute();
  assert.deepEqual(
    mails.map((m) => m.related_id),
    [live[0]!.id],
    'one email, for the one invitation',
  );

  const mail = await world.smtp.waitFor((m) => m.to === email && /invited/.test(m.subject));
  const link = linkOf(world, mail.text);
  assert.equal((await join(world, link, 'Aroha')).status, 303);
  const memberId = (await liveMemberId(world, email))!;
  const removed = await owner.browser.request(`/dashboard/team/members/${memberId}/remove`, {
    form: { csrf: owner.csrf },
  });
  assert.equal(removed.status, 303);
  assert.equal((await join(world, link, 'Aroha again')).status, 400, 'the link sent before the removal is spent');
  assert.equal(await liveMemberId(world, email), null, 'still removed');
});

test('the same invitation sent again after a minute sends a new link, and the first no longer works', async (t) => {
  const world = await dashWorld(t);
  const [kowhai] = world.merchants;
  const owner = await signedIn(world, kowhai.email);
  const email = 'tui@example.com';
  const form = { csrf: owner.csrf, email, role: 'viewer' };
  assert.equal((await owner.browser.request('/dashboard/team/invitations', { form })).status, 303);
  const [first] = await liveInvitationsTo(world, email);
  await world.app.deps.db
    .updateTable('invitations')
    .set({ created_at: world.app.deps.clock.now() - INVITATION_REPEAT_WINDOW_MS })
    .where('id', '=', first!.id)
    .execute();
  const again = await owner.browser.request('/dashboard/team/invitations', { form });
  assert.equal(again.headers.get('location'), '/dashboard/team?done=reinvited');
  const [second] = await liveInvitationsTo(world, email);
  assert.notEqual(second!.id, first!.id, 'a new invitation');

  const firstMail = await world.smtp.waitFor((m) => m.to === email && /invited/.test(m.subject));
  const secondMail = await world.smtp.waitFor(
    (m) => m.to === email && /invited/.test(m.subject) && m.text !== firstMail.text,
  );
  const links = [linkOf(world, firstMail.text), linkOf(world, secondMail.text)];
  const opened = await Promise.all(links.map((l) => new Browser(world.baseUrl).request(l)));
  assert.deepEqual(
    opened.map((page) => page.status).sort(),
    [200, 400],
    'one link works; the one it replaced no longer does',
  );
  assert.match(textOf(opened.find((page) => page.status === 400)!.text), /This invitation no longer works/);

  await chainCommitted(world.app.deps.db);
  const revocations = await world.app.deps.db
    .selectFrom('audit_events')
    .select(['action', 'summary'])
    .where('user_id', '=', kowhai.userId)
    .where('action', '=', 'invitation.revoke')
    .execute();
  assert.deepEqual(
    revocations.map((r) => JSON.parse(r.summary)),
    [{ email, role: 'viewer', reason: 'invitation.create' }],
    'the replaced invitation is recorded as revoked, by the owner who invited again',
  );
});

test('inviting an email again replaces its pending invitation (another role too); the page says only the newest link works', async (t) => {
  const world = await dashWorld(t);
  const [kowhai] = world.merchants;
  const owner = await signedIn(world, kowhai.email);
  const email = 'rua@example.com';
  const sent = await owner.browser.request('/dashboard/team/invitations', {
    form: { csrf: owner.csrf, email, role: 'viewer' },
  });
  assert.equal(sent.headers.get('location'), '/dashboard/team?done=invited');
  const again = await owner.browser.request('/dashboard/team/invitations', {
    form: { csrf: owner.csrf, email, role: 'developer' },
  });
  assert.equal(again.headers.get('location'), '/dashboard/team?done=reinvited');
  assert.match(
    textOf((await owner.browser.request(again.headers.get('location')!)).text),
    /The invitation is sent again\. Only the newest link works/,
  );
  assert.deepEqual(
    (await liveInvitationsTo(world, email)).map((i) => i.role),
    ['developer'],
  );
  const developerMail = await world.smtp.waitFor((m) => m.to === email && /Developer/.test(m.text));
  const viewerMail = await world.smtp.waitFor((m) => m.to === email && /Viewer/.test(m.text));
  assert.equal((await join(world, linkOf(world, viewerMail.text), 'Rua')).status, 400, 'the viewer link is dead');
  assert.equal((await join(world, linkOf(world, developerMail.text), 'Rua')).status, 303, 'the newest works');
});

test('joining revokes the team’s other invitations to that email, and removing a member revokes those addressed to them', async (t) => {
  const world = await dashWorld(t);
  const [kowhai] = world.merchants;
  const owner = await signedIn(world, kowhai.email);
  const ownerId = (await liveMemberId(world, kowhai.email))!;
  const email = 'mere@example.com';
  const sent = await owner.browser.request('/dashboard/team/invitations', {
    form: { csrf: owner.csrf, email, role: 'support' },
  });
  assert.equal(sent.status, 303);
  const mail = await world.smtp.waitFor((m) => m.to === email && /invited/.test(m.subject));
  const earlier = await invitationMadeEarlier(world, kowhai.userId, email, ownerId);
  assert.equal((await liveInvitationsTo(world, email)).length, 2);

  assert.equal((await join(world, linkOf(world, mail.text), 'Mere')).status, 303);
  assert.equal((await liveInvitationsTo(world, email)).length, 0, 'joining revoked the other');
  const memberId = (await liveMemberId(world, email))!;

  const later = await invitationMadeEarlier(world, kowhai.userId, email, ownerId);
  const removed = await owner.browser.request(`/dashboard/team/members/${memberId}/remove`, {
    form: { csrf: owner.csrf },
  });
  assert.equal(removed.status, 303);
  assert.equal((await liveInvitationsTo(world, email)).length, 0, 'removing revoked the one addressed to them');
  for (const link of [earlier, later]) assert.equal((await join(world, link, 'Mere again')).status, 400);
  assert.equal(await liveMemberId(world, email), null);

  await chainCommitted(world.app.deps.db);
  const revocations = await world.app.deps.db
    .selectFrom('audit_events')
    .select(['actor_id', 'summary'])
    .where('user_id', '=', kowhai.userId)
    .where('action', '=', 'invitation.revoke')
    .orderBy('seq')
    .execute();
  assert.deepEqual(
    revocations.map((r) => [r.actor_id, JSON.parse(r.summary).reason]),
    [
      [memberId, 'member.join'],
      [ownerId, 'member.remove'],
    ],
  );
});
