import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parse } from 'csv-parse/sync';
import { Browser } from '../../../test/payer.ts';
import { dashWorld, logIn, textOf, type DashMerchant, type DashWorld } from '../../../test/dashboard.ts';
import { statementFile } from '../../../test/support/statements.ts';
import { localDateAt } from '../../shared/zone.ts';
import { chainCommitted } from '../audit/audit.service.ts';

// Reconciliation in the dashboard, over HTTP on SQLite and PostgreSQL: a statement file uploaded as
// multipart/form-data with the form's CSRF token, the view (matched, money not seen, credits that
// match nothing, totals per day), a bad file refused with its line and nothing kept, unmatching and
// matching by hand (recorded with who), the CSV export, another merchant's line a 404.

async function paidPayment(merchant: DashMerchant, reference: string) {
  const request = (
    await merchant.test.post('/v1/requests', {
      bank_account_id: merchant.bankAccountId,
      message: 'Flat whites',
      amount: '12.50 NZD',
      reference,
    })
  ).body.request;
  const paid = await merchant.test.post(`/v1/test-helpers/requests/${request.id}/pay`, {
    cust_info: { email: 'aroha@example.com' },
  });
  assert.equal(paid.status, 200, paid.text);
  return paid.body.payment as { id: string; pcr: { particulars: string } };
}

/** Posts the upload form as a browser does: multipart, with the session cookie and the origin. */
async function upload(world: DashWorld, browser: Browser, content: string, csrf: string | null) {
  const form = new FormData();
  if (csrf !== null) form.append('csrf', csrf);
  form.append('file', new Blob([content], { type: 'text/csv' }), 'statement.csv');
  const response = await fetch(`${world.baseUrl}/dashboard/test/reconciliation/statements`, {
    method: 'POST',
    body: form,
    redirect: 'manual',
    headers: {
      origin: world.baseUrl,
      cookie: [...browser.cookies].map(([k, v]) => `${k}=${v}`).join('; '),
    },
  });
  return { status: response.status, location: response.headers.get('location'), text: await response.text() };
}

const page = '/dashboard/test/reconciliation';

test('a statement is uploaded, matched and shown; a bad file is refused with its line; lines are unmatched and matched by hand', async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [kowhai, tui] = world.merchants;
  const first = await paidPayment(kowhai, 'INV-1');
  const second = await paidPayment(kowhai, 'INV-2');
  const unseen = await paidPayment(kowhai, 'INV-3');
  const today = localDateAt(world.app.deps.clock.now(), world.app.deps.config.serviceTimeZone);
  const content = statementFile('anz', { p1: first.pcr.particulars, r1: 'INV-1', r2: 'INV-2', today });
  const browser = await logIn(world, kowhai);

  const empty = await browser.request(page);
  assert.equal(empty.status, 200);
  assert.match(empty.text, /enctype="multipart\/form-data"/);
  const csrf = Browser.csrfOf(empty.text);

  const forged = await upload(world, browser, content, null);
  assert.equal(forged.status, 403);
  assert.equal((await kowhai.test.get('/v1/statements')).body.statements.length, 0);

  const rows = content.split('\n');
  const bad = upload(
    world,
    browser,
    [...rows.slice(0, 3), rows[3]!.replace('-2.50', 'two fifty'), ...rows.slice(4)].join('\n'),
    csrf,
  );
  const refused = await bad;
  assert.equal(refused.status, 400);
  assert.match(textOf(refused.text), /Line 4: the amount "two fifty" is not an amount.*Nothing from it was kept/);
  assert.equal((await kowhai.test.get('/v1/statement-lines')).body.statement_lines.length, 0);

  const huge = await upload(world, browser, `${content}${'x'.repeat(2_000_001)}`, csrf);
  assert.equal(huge.status, 413, huge.text.slice(0, 300));
  assert.match(textOf(huge.text), /A statement file can be at most 2 MB/);
  // drawn in the signed-in layout, as the section's other errors are
  assert.match(huge.text, /<nav class="sections" aria-label="Sections">/);
  assert.match(huge.text, /href="\/dashboard\/test\/reconciliation" aria-current="page"/);

  const imported = await upload(world, browser, content, csrf);
  assert.equal(imported.status, 303, imported.text);
  assert.equal(imported.location, `${page}?done=imported&added=7&matched=2`);
  const again = await upload(world, browser, content, csrf);
  assert.equal(again.location, `${page}?done=again`);

  // a date that is no day is said, and the view keeps its default range for it
  const badDate = await browser.request(`${page}?from=2026-13-45`);
  assert.equal(badDate.status, 200);
  assert.match(
    textOf(badDate.text),
    /“From” \(2026-13-45\) is not a date we understand, so the page is shown without it/,
  );
  assert.match(badDate.text, /id="from" name="from"[^>]*aria-invalid="true"/);
  // a range backwards is said in the form's words
  const backwards = await browser.request(`${page}?from=2026-12-10&to=2026-12-01`);
  assert.equal(backwards.status, 400);
  assert.match(
    textOf(backwards.text),
    /“From” \(2026-12-10\) is after “To” \(2026-12-01\): choose a From on or before To\./,
  );

  const view = await browser.request(`${page}?done=imported&added=7&matched=2&days=0`);
  const shown = textOf(view.text);
  assert.match(shown, /The statement is imported: 7 new lines, 2 matched\./);
  assert.ok(view.text.includes(first.id) && view.text.includes(second.id), 'the matched payments');
  assert.match(shown, /Money not seen.*\$0\.01/);
  assert.ok(view.text.includes(`/payments/${unseen.id}`), 'the payment no line shows');
  assert.match(shown, /\$1,000\.00/);

  const lines = (await kowhai.test.get('/v1/statement-lines')).body.statement_lines as any[];
  const firstLine = lines.find((line) => line.match?.payment_id === first.id);
  const unmatched = await browser.request(`${page}/lines/${firstLine.id}/unmatch`, { form: { csrf } });
  assert.equal(unmatched.status, 303);
  const matched = await browser.request(`${page}/lines/${firstLine.id}/match`, { form: { csrf, target: unseen.id } });
  assert.equal(matched.status, 303);
  const line = (await kowhai.test.get(`/v1/statement-lines/${firstLine.id}`)).body.statement_line;
  assert.equal(line.match.payment_id, unseen.id);
  assert.equal(line.match.method, 'manual');
  assert.equal(line.match.matched_by, kowhai.email);
  const taken = await browser.request(`${page}/lines/${firstLine.id}/match`, { form: { csrf, target: second.id } });
  assert.equal(taken.status, 409);
  assert.match(textOf(taken.text), /matched already/);

  await chainCommitted(world.app.deps.db);
  const audit = await world.app.deps.db
    .selectFrom('audit_events')
    .select(['action', 'actor_kind'])
    .where('object_id', '=', firstLine.id)
    .orderBy('seq')
    .execute();
  assert.deepEqual(audit, [
    { action: 'statement_line.unmatch', actor_kind: 'member' },
    { action: 'statement_line.match', actor_kind: 'member' },
  ]);

  // What a payer typed reaches the export as text, never as a formula a spreadsheet would run.
  const formula = rows[1]!.replace('A Payer', '"=HYPERLINK(""https://evil.example"")"').replace('0.01', '5.00');
  assert.equal((await upload(world, browser, [rows[0], formula].join('\n'), csrf)).status, 303);
  const csv = await browser.request(`${page}/export.csv?days=0`);
  assert.equal(csv.status, 200);
  assert.match(csv.headers.get('content-type') ?? '', /^text\/csv/);
  const records = parse(csv.text) as string[][];
  assert.equal(records[0]![0], 'date');
  assert.ok(records.some((record) => record[7] === unseen.id && record[8] === 'manual'));
  assert.ok(records.some((record) => record[7] === first.id && record[6] === 'money not seen'));
  assert.ok(records.some((record) => record[5] === `'=HYPERLINK("https://evil.example")`));
  assert.ok(!records.some((record) => record.some((cell) => cell.startsWith('='))));

  // another merchant's line is not found, and nothing changes
  const other = await logIn(world, tui);
  const otherCsrf = Browser.csrfOf((await other.request(page)).text);
  const foreign = await other.request(`${page}/lines/${firstLine.id}/unmatch`, { form: { csrf: otherCsrf } });
  assert.equal(foreign.status, 404);
  assert.equal(
    (await kowhai.test.get(`/v1/statement-lines/${firstLine.id}`)).body.statement_line.match.payment_id,
    unseen.id,
  );
});
