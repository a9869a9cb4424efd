import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkoutWorld, createRequest, payViaPage } from '../../../test/flows/checkout.fixtures.ts';
import { hook } from '../banks/banks.testing.ts';
import { PAYER_ACCOUNT_JOB } from './payments.service.ts';

// After a successful payment, the payer's account is read from the bank (debtor-account) and kept
// sealed for refunds; it never appears in clear in the store or in the API. On both engines
// (TEST_ENGINE=postgres for PostgreSQL).

async function runPayerAccountJobs(world: Awaited<ReturnType<typeof checkoutWorld>>): Promise<number> {
  const worker = world.app.deps.worker;
  let ran = 0;
  for (const job of await worker.claim(100)) {
    if (job.kind !== PAYER_ACCOUNT_JOB) continue;
    await worker.run(job);
    ran += 1;
  }
  return ran;
}

test('a successful payment keeps the payer account the bank released, sealed', async (t) => {
  const world = await checkoutWorld(t);
  const request = await createRequest(world, { amount: '12.50 NZD', reference: 'INV-7' });
  await payViaPage(world, request.id, {});
  const [payment] = (await world.api.get(`/v1/requests/${request.id}/payments`)).body.payments;
  assert.equal(payment.status, 'successful');
  assert.equal(await runPayerAccountJobs(world), 1);

  const row = await world.app.deps.db.selectFrom('payments').select(['payer_account_sealed']).where('id', '=', payment.id).executeTakeFirstOrThrow();
  const payer = (await hook('GET', `${world.baseUrl}/sandbox-bank/test/payers/sandbox`)).body.Data;
  assert.ok(row.payer_account_sealed?.startsWith('sealed:v1:'));
  assert.ok(!row.payer_account_sealed!.includes(payer.AccountNumber));
  assert.deepEqual(JSON.parse(world.app.deps.secrets.open(row.payer_account_sealed!)), {
    scheme_name: 'BECSElectronicCredit', identification: payer.AccountNumber, name: payer.Name,
  });
  const shown = await world.api.get(`/v1/payments/${payment.id}`);
  assert.ok(!shown.text.includes(payer.AccountNumber));
  // once kept, it is not asked for again
  assert.equal(await runPayerAccountJobs(world), 0);
});
