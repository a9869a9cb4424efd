import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { checkoutWorld, createRequest } from '../../../test/flows/checkout.fixtures.ts';
import { formatAmount } from '../../shared/money.ts';
import { runRefundJobs } from '../../../test/support/refunds.ts';

// Any interleaving of refunds the bank pays, refunds it refuses, and refunds over what remains keeps
// `amount_refunded` at most the payment, and equal to the sum of the refunds that have not failed:
// through the API, the refund job and the sandbox bank over HTTP, on both engines.

type Step = { kind: 'refund' | 'declined'; cents: number } | { kind: 'rest' };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant<'refund'>('refund'), cents: fc.integer({ min: 1, max: 700 }) }),
  fc.record({ kind: fc.constant<'declined'>('declined'), cents: fc.integer({ min: 1, max: 700 }) }),
  fc.constant<Step>({ kind: 'rest' }),
);

test('amount_refunded is never more than the payment, and always the sum of the refunds not failed', async (t) => {
  const world = await checkoutWorld(t);
  const paymentCents = 1250;
  await fc.assert(
    fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 7 }), async (steps) => {
      const request = await createRequest(world, { amount: formatAmount(paymentCents).value });
      const payment = (await world.api.post(`/v1/test-helpers/requests/${request.id}/pay`, {})).body.payment;
      for (const s of steps) {
        if (s.kind === 'declined') await world.api.post('/v1/test-helpers/refunds/decline-next', { count: 1 });
        const body =
          s.kind === 'rest'
            ? { payment_id: payment.id }
            : { payment_id: payment.id, amount: formatAmount(s.cents).value };
        const answer = await world.api.post('/v1/refunds', body);
        assert.ok([201, 422].includes(answer.status), answer.text);
        if (answer.status === 422) assert.equal(answer.body.code, 'refund_rejected.exceeds_refundable');
        await runRefundJobs(world.app.deps.worker);
        if (s.kind === 'declined')
          await world.api.post('/v1/test-helpers/refunds/decline-next', { count: 0 }).catch(() => null);

        const shown = (await world.api.get(`/v1/payments/${payment.id}`)).body.payment;
        const refunds = (await world.api.get(`/v1/refunds?payment_id=${payment.id}`)).body.refunds as Array<{
          status: string;
          amount: { value: string };
        }>;
        const counted = refunds
          .filter((refund) => refund.status !== 'failed')
          .reduce((sum, refund) => sum + Math.round(Number.parseFloat(refund.amount.value) * 100), 0);
        const refunded = Math.round(Number.parseFloat(shown.amount_refunded.value) * 100);
        assert.equal(refunded, counted);
        assert.ok(refunded <= paymentCents);
        assert.ok(
          refunds.every((refund) => refund.status !== 'pending'),
          'every refund settled at the sandbox bank',
        );
      }
    }),
    { numRuns: 8 },
  );
});
