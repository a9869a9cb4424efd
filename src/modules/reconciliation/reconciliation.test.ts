import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkoutWorld, createRequest, eventsOf, type CheckoutWorld } from '../../../test/flows/checkout.fixtures.ts';
import { STATEMENT_FIXTURES, statementFile, type Fixture } from '../../../test/support/statements.ts';
import { localDateAt } from '../../shared/zone.ts';
import { runRefundJobs } from '../../../test/support/refunds.ts';
import { chainCommitted } from '../audit/audit.service.ts';

// Statement import and reconciliation through the API, with test payments paid through the sandbox
// bank (test mode moves 0.01, so the statements show 0.01: what moved). The files are the test
// files written in each bank's layout, with their noise: a fee, a transfer, two identical cash
// deposits, a card purchase. On both engines (TEST_ENGINE=postgres for PostgreSQL).

async function paidPayment(world: CheckoutWorld, reference: string) {
  const request = await createRequest(world, { amount: '12.50 NZD', reference });
  const paid = await world.api.post(`/v1/test-helpers/requests/${request.id}/pay`, {
    cust_info: { email: 'aroha@example.com' },
  });
  assert.equal(paid.status, 200, paid.text);
  const payment = paid.body.payment;
  return {
    id: payment.id as string,
    request_id: payment.request_id as string,
    particulars: payment.pcr.particulars as string,
  };
}

/** Two paid payments and the statement file that shows them, in one layout. */
async function paymentsAndFile(world: CheckoutWorld, fixture: Fixture, tag = fixture.slice(0, 3).toUpperCase()) {
  const r1 = `INV-${tag}-1`;
  const r2 = `INV-${tag}-2`;
  const first = await paidPayment(world, r1);
  const second = await paidPayment(world, r2);
  const today = localDateAt(world.app.deps.clock.now(), world.app.deps.config.serviceTimeZone);
  return { first, second, today, content: statementFile(fixture, { p1: first.particulars, r1, r2, today }) };
}

const linesOf = async (world: CheckoutWorld, query = '') => {
  const listed = await world.api.get(`/v1/statement-lines?limit=1000${query}`);
  assert.equal(listed.status, 200, listed.text);
  return listed.body.statement_lines as any[];
};

for (const fixture of Object.keys(STATEMENT_FIXTURES) as Fixture[]) {
  test(`a ${fixture} statement is imported, its payments matched by particulars and reference, the noise left unmatched`, async (t) => {
    const world = await checkoutWorld(t);
    const { first, second, content } = await paymentsAndFile(world, fixture);

    const imported = await world.api.post('/v1/statements', { content, filename: `statement-${fixture}` });
    assert.equal(imported.status, 201, imported.text);
    assert.equal(imported.body.already_imported, false);
    const statement = imported.body.statement;
    assert.match(statement.id, /^stmt_[0-9A-Z]{26}$/);
    assert.equal(statement.layout, fixture === 'ofx-xml' ? 'ofx' : fixture);
    assert.equal(statement.line_count, 7);
    // two identical cash deposits are two lines
    assert.equal(statement.added_count, 7);
    assert.equal(statement.matched_count, 2);

    const lines = await linesOf(world, `&statement_id=${statement.id}`);
    assert.equal(lines.length, 7);
    const byPayment = new Map(lines.filter((l) => l.match).map((l) => [l.match.payment_id, l]));
    assert.equal(byPayment.get(first.id)?.match.method, 'particulars');
    assert.equal(byPayment.get(second.id)?.match.method, 'reference');
    assert.equal(byPayment.get(first.id)?.match.matched_by, 'tono');
    assert.deepEqual(byPayment.get(first.id)?.amount, { value: '0.01 NZD', formatted: '$0.01' });
    const deposits = lines.filter((l) => l.amount.value === '20.00 NZD');
    assert.equal(deposits.length, 2);
    assert.ok(deposits.every((l) => l.match === null));

    const reconciled = (await eventsOf(world)).filter((e) => e.type === 'payment.reconciled');
    assert.deepEqual(reconciled.map((e) => e.data.id).sort(), [first.id, second.id].sort());
    assert.equal(reconciled.find((e) => e.data.id === first.id)?.data.method, 'particulars');

    // the same file again changes nothing
    const again = await world.api.post('/v1/statements', { content, filename: 'again' });
    assert.equal(again.status, 200, again.text);
    assert.equal(again.body.already_imported, true);
    assert.equal(again.body.statement.id, statement.id);
    assert.equal((await linesOf(world)).length, 7);
    assert.equal((await world.api.get('/v1/statements')).body.statements.length, 1);
    assert.equal((await eventsOf(world)).filter((e) => e.type === 'payment.reconciled').length, 2);
  });
}

test('an overlapping statement adds only the lines not known: the partial day is completed, a duplicate line kept', async (t) => {
  const world = await checkoutWorld(t);
  const { content } = await paymentsAndFile(world, 'anz');
  const rows = content.trimEnd().split('\n');
  // the first export stops part way through its last day: one of the two cash deposits is missing
  const partial = [rows[0], rows[3], rows[4], rows[5]].join('\n');
  const first = await world.api.post('/v1/statements', { content: partial });
  assert.equal(first.status, 201, first.text);
  assert.equal(first.body.statement.added_count, 3);

  const full = await world.api.post('/v1/statements', { content });
  assert.equal(full.status, 201, full.text);
  assert.equal(full.body.statement.line_count, 7);
  assert.equal(full.body.statement.added_count, 4);
  const lines = await linesOf(world);
  assert.equal(lines.length, 7);
  assert.equal(lines.filter((l) => l.amount.value === '20.00 NZD').length, 2);

  // a third, overlapping and with a genuinely new third deposit on the same day, adds just that one
  const third = await world.api.post('/v1/statements', { content: `${content.trimEnd()}\n${rows[5]}\n` });
  assert.equal(third.body.statement.added_count, 1);
  assert.equal((await linesOf(world)).filter((l) => l.amount.value === '20.00 NZD').length, 3);
});

test('a malformed file is refused with the line and what is wrong, and nothing from it is kept', async (t) => {
  const world = await checkoutWorld(t);
  const { content } = await paymentsAndFile(world, 'westpac');
  const rows = content.split('\n');
  rows[5] = rows[5]!.replace('20.00', '20.0.0');
  const refused = await world.api.post('/v1/statements', { content: rows.join('\n') });
  assert.equal(refused.status, 400, refused.text);
  assert.equal(refused.body.code, 'bad_request.invalid_statement');
  assert.equal(refused.body.params.line, 6);
  assert.match(refused.body.message, /Line 6: the amount "20\.0\.0" is not an amount/);
  assert.equal((await linesOf(world)).length, 0);
  assert.equal((await world.api.get('/v1/statements')).body.statements.length, 0);

  const unknown = await world.api.post('/v1/statements', { content: 'When,How much\n01/11/2026,5.00\n' });
  assert.equal(unknown.status, 400);
  assert.equal(unknown.body.code, 'bad_request.unknown_statement_layout');
  assert.ok(unknown.body.params.accepted.some((layout: string) => layout.startsWith('Kiwibank')));
});

test('a line larger than any payment, past 32-bit cents, is kept to the cent and counted in its day', async (t) => {
  const world = await checkoutWorld(t);
  const { content } = await paymentsAndFile(world, 'westpac');
  const rows = content.trimEnd().split('\n');
  rows[5] = rows[5]!.replace('20.00', '25000000.01');
  const imported = await world.api.post('/v1/statements', { content: `${rows.join('\n')}\n` });
  assert.equal(imported.status, 201, imported.text);
  const large = (await linesOf(world)).filter((line) => line.amount.value === '25000000.01 NZD');
  assert.equal(large.length, 1);
  const view = await world.api.get('/v1/reconciliation?unseen_after_days=0');
  assert.equal(view.status, 200, view.text);
  assert.ok(view.body.unmatched_credits.some((line: any) => line.amount.value === '25000000.01 NZD'));
  const credits = view.body.days.map((day: any) => Number.parseFloat(day.statement_credits.value));
  assert.ok(
    credits.some((value: number) => value > 25_000_000),
    JSON.stringify(view.body.days),
  );
});
test('a line is unmatched and matched by hand, with who and when; the reconciliation shows money not seen and totals per day', async (t) => {
  const world = await checkoutWorld(t);
  const { first, second, content, today } = await paymentsAndFile(world, 'bnz');
  const unseen = await paidPayment(world, 'INV-NEVER');
  const imported = await world.api.post('/v1/statements', { content }, { headers: { 'idempotency-key': 'stmt-1' } });
  assert.equal(imported.status, 201);
  const replay = await world.api.post('/v1/statements', { content }, { headers: { 'idempotency-key': 'stmt-1' } });
  assert.equal(replay.headers['idempotent-replayed'], 'true');

  const lines = await linesOf(world);
  const firstLine = lines.find((l) => l.match?.payment_id === first.id);
  const unmatched = await world.api.post(`/v1/statement-lines/${firstLine.id}/unmatch`);
  assert.equal(unmatched.status, 200, unmatched.text);
  assert.equal(unmatched.body.statement_line.match, null);
  assert.equal(unmatched.body.statement_line.auto_match, false);
  assert.equal(
    (await world.api.post(`/v1/statement-lines/${firstLine.id}/unmatch`)).body.code,
    'conflict.invalid_state',
  );

  // a payment matched already cannot take a second line; a debit cannot be a payment
  const secondLine = lines.find((l) => l.match?.payment_id === second.id);
  const taken = await world.api.post(`/v1/statement-lines/${firstLine.id}/match`, { payment_id: second.id });
  assert.equal(taken.status, 409);
  assert.equal(taken.body.code, 'conflict.already_matched');
  const fee = lines.find((l) => l.amount.value === '2.50 NZD' && l.direction === 'debit');
  assert.equal(fee?.amount.formatted, '$2.50', 'the amount is positive; the direction says money out');
  const wrongWay = await world.api.post(`/v1/statement-lines/${fee.id}/match`, { payment_id: unseen.id });
  assert.equal(wrongWay.status, 400);
  assert.ok(secondLine);

  const matched = await world.api.post(`/v1/statement-lines/${firstLine.id}/match`, { payment_id: unseen.id });
  assert.equal(matched.status, 200, matched.text);
  assert.equal(matched.body.statement_line.match.method, 'manual');
  assert.equal(matched.body.statement_line.match.payment_id, unseen.id);
  assert.match(matched.body.statement_line.match.matched_by, /^API key key_/);
  const events = (await eventsOf(world, unseen.id)).filter((e) => e.type === 'payment.reconciled');
  assert.equal(events.length, 1);
  assert.equal(events[0]!.data.method, 'manual');

  await chainCommitted(world.app.deps.db);
  const audit = await world.app.deps.db
    .selectFrom('audit_events')
    .select(['action', 'object_id'])
    .where('user_id', '=', world.merchant.userId)
    .where('action', 'in', ['statement.import', 'statement_line.match', 'statement_line.unmatch'])
    .orderBy('seq')
    .execute();
  assert.deepEqual(
    audit.map((a) => a.action),
    ['statement.import', 'statement_line.unmatch', 'statement_line.match'],
  );

  const view = await world.api.get(`/v1/reconciliation?unseen_after_days=0&from=${today}&to=${today}`);
  assert.equal(view.status, 200, view.text);
  // `first` lost its line to `unseen`: it is the money not seen now
  assert.deepEqual(
    view.body.money_not_seen.map((p: any) => p.payment_id),
    [first.id],
  );
  assert.equal(view.body.matched_count, 2);
  const day = view.body.days.find((d: any) => d.date === today);
  assert.equal(day.statement_credits.value, '0.02 NZD');
  assert.equal(day.matched_credits.value, '0.02 NZD');
  assert.equal(day.tono_successful.value, '0.03 NZD');
  assert.equal(day.tono_not_seen.value, '0.01 NZD');
  const wider = await world.api.get('/v1/reconciliation?unseen_after_days=0');
  assert.deepEqual(wider.body.unmatched_credits.map((l: any) => l.amount.value).sort(), [
    '1000.00 NZD',
    '20.00 NZD',
    '20.00 NZD',
  ]);
  // after three days (the default), not before
  assert.equal((await world.api.get('/v1/reconciliation')).body.money_not_seen.length, 0);
});

test('another merchant’s statements and lines are not found', async (t) => {
  const world = await checkoutWorld(t);
  const { content } = await paymentsAndFile(world, 'kiwibank');
  const statement = (await world.api.post('/v1/statements', { content })).body.statement;
  const line = (await linesOf(world))[0];
  assert.equal((await world.live.get(`/v1/statements/${statement.id}`)).status, 404);
  assert.equal((await world.live.post(`/v1/statement-lines/${line.id}/unmatch`)).status, 404);
});

test('money out is matched to a refund by the payment’s particulars in its code; filters of the lines', async (t) => {
  const world = await checkoutWorld(t);
  const { first, content, today } = await paymentsAndFile(world, 'bnz');
  const refund = (await world.api.post('/v1/refunds', { payment_id: first.id, amount: '2.00 NZD' })).body.refund;
  await runRefundJobs(world.app.deps.worker);
  assert.equal((await world.api.get(`/v1/refunds/${refund.id}`)).body.refund.status, 'successful');
  // the refund's line: particulars "Refund", code the payment's V-…, its reference; 0.01 moved in test mode
  const [d, m, y] = [today.slice(8, 10), today.slice(5, 7), today.slice(2, 4)];
  const withRefund = `${content.trimEnd()}\n${d}/${m}/${y},-0.01,A Payer,Refund,${first.particulars},INV-BNZ-1,DD,02-0100-0123456-00,,,,,,${d}/${m}/${y}\n`;
  const imported = await world.api.post('/v1/statements', { content: withRefund });
  assert.equal(imported.status, 201, imported.text);
  assert.equal(imported.body.statement.matched_count, 3);
  const debits = await linesOf(world, '&direction=debit&matched=true');
  assert.equal(debits.length, 1);
  assert.equal(debits[0].match.refund_id, refund.id);
  assert.equal(debits[0].match.method, 'particulars');
  assert.equal((await linesOf(world, '&direction=credit&matched=false')).length, 3);
  // a refund is no payment: no payment.reconciled for it
  assert.equal((await eventsOf(world)).filter((e) => e.type === 'payment.reconciled').length, 2);
});

test('two overlapping statements imported at once keep each line once and each payment matched once', async (t) => {
  const world = await checkoutWorld(t);
  const { content } = await paymentsAndFile(world, 'anz');
  const rows = content.trimEnd().split('\n');
  const replies = await Promise.all([
    world.api.post('/v1/statements', { content: rows.slice(0, 5).join('\n') }),
    world.api.post('/v1/statements', { content }),
    world.api.post('/v1/statements', { content: [rows[0], ...rows.slice(3)].join('\n') }),
  ]);
  for (const reply of replies) assert.ok(reply.status === 201 || reply.status === 200, reply.text);
  assert.equal((await linesOf(world)).length, 7);
  assert.equal(
    replies.reduce((sum, reply) => sum + reply.body.statement.added_count, 0),
    7,
  );
  const reconciled = (await eventsOf(world)).filter((e) => e.type === 'payment.reconciled');
  assert.equal(reconciled.length, 2);
  assert.equal(new Set(reconciled.map((e) => e.data.id)).size, 2);
});

test('a statement larger than the route takes is refused with the route’s own limit', async (t) => {
  const world = await checkoutWorld(t);
  const big = await world.api.post('/v1/statements', { content: 'x'.repeat(4_300_000) });
  assert.equal(big.status, 413);
  assert.equal(big.body.code, 'payload_too_large');
  assert.equal(big.body.params.limit_bytes, 4_200_000);
  const long = await world.api.post('/v1/statements', { content: 'x'.repeat(2_000_001) });
  assert.equal(long.status, 400);
  assert.equal(long.body.code, 'bad_request.invalid_param.content');
});

test('the reconciliation view covers at most 366 days, counting from and to', async (t) => {
  const world = await checkoutWorld(t);
  const view = (from: string, to: string) => world.api.get(`/v1/reconciliation?from=${from}&to=${to}`);
  for (const [from, to] of [
    ['2027-01-01', '2028-01-01'],
    ['2028-01-01', '2028-12-31'],
    ['2027-06-01', '2027-06-01'],
  ]) {
    const accepted = await view(from!, to!);
    assert.equal(accepted.status, 200, `${from}..${to}: ${accepted.text}`);
    assert.equal(accepted.body.from, from);
    assert.equal(accepted.body.to, to);
  }
  for (const [from, to] of [
    ['2027-01-01', '2028-01-02'],
    ['2028-01-01', '2029-01-01'],
  ]) {
    const refused = await view(from!, to!);
    assert.equal(refused.status, 400, `${from}..${to}: ${refused.text}`);
    assert.deepEqual(refused.body, {
      code: 'bad_request.invalid_param.from',
      message: 'The range can be at most 366 days',
      params: { field: 'from' },
    });
  }
});

test('an OFX line stamped with a time at GMT is on its date in the service time zone', async (t) => {
  const world = await checkoutWorld(t);
  assert.equal(world.app.deps.config.serviceTimeZone, 'Pacific/Auckland');
  // 12:00 GMT on 31 August 2027 is midnight starting 1 September in New Zealand (+12:00).
  const content = statementFile('ofx', { p1: 'V-ABC123', r1: 'INV-1', r2: 'INV-2', today: '2027-09-01' }).replace(
    /<DTPOSTED>[^<\r\n]*/g,
    '<DTPOSTED>20270831120000.000[0:GMT]',
  );
  const imported = await world.api.post('/v1/statements', { content });
  assert.equal(imported.status, 201, imported.text);
  assert.equal(imported.body.statement.first_date, '2027-09-01');
  assert.equal(imported.body.statement.last_date, '2027-09-01');
});
