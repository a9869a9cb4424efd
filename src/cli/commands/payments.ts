import { amountValue } from '../../shared/money.ts';
import { iso, systemClock } from '../../shared/time.ts';
import { storeOf } from '../../store/store.ts';
import type { Db } from '../../store/db.ts';
import type { CliCommand } from '../command.ts';
import { operator, print, withDb } from './open.ts';

// The operator's hand on payments the service has stopped asking the bank about
// (docs/configuration.md, "Payments the bank never answered"): list them, and record the bank's word.

/**
 * Loaded by the commands that need them: the other commands of the CLI start without them. A
 * payment's end is an event, which every module's subscribers (webhooks, receipts, email) take in
 * its transaction, so all the modules are wired first.
 */
const modules = async () => ({
  wired: await import('../../modules/index.ts'),
  payments: await import('../../modules/payments/payments.service.ts'),
  rules: await import('../../modules/payments/payments.rules.ts'),
  oneOff: await import('../../modules/payments/one-off.service.ts'),
  executions: await import('../../modules/consents/execute.service.ts'),
  charges: await import('../../modules/subscriptions/subscriptions.charges.ts'),
  clocks: await import('../../modules/merchants/merchants.clock.ts'),
});
type Modules = Awaited<ReturnType<typeof modules>>;
type Payment = NonNullable<Awaited<ReturnType<Modules['payments']['findPaymentById']>>>;

/** The most one listing shows; the oldest first, so what waits longest is never cut off. */
const UNANSWERED_SHOWN = 1000;

const kindOf = (payment: Payment) =>
  payment.subscription_id ? 'subscription' : payment.recurring_consent_id ? 'recurring' : 'one_off';

/** Now on the payment's owner's clock: a test merchant's test clock, else real time. */
async function nowFor(m: Modules, db: Db, payment: Payment): Promise<number> {
  return (await m.clocks.clockOf({ db, clock: systemClock }, payment)).now();
}

async function waitsForWord(m: Modules, db: Db, payment: Payment): Promise<boolean> {
  if (payment.subscription_id) return m.charges.subscriptionPaymentWaitsForBankWord(db, payment);
  return m.rules.waitsForBankWord(payment, await nowFor(m, db, payment));
}

function shown(payment: Payment) {
  return {
    id: payment.id,
    merchant_id: payment.user_id,
    mode: payment.mode,
    kind: kindOf(payment),
    status: payment.status,
    amount: amountValue(payment.settled_cents),
    particulars: payment.particulars,
    bank_id: payment.bank_id,
    bank_payment_id: payment.bank_payment_id,
    failure_reason: payment.failure_reason,
    created_at: iso(payment.created_at),
    submitted_at: payment.submitted_at === null ? null : iso(payment.submitted_at),
  };
}

export const paymentCommands: Record<string, CliCommand> = {
  'payments unanswered': {
    usage: '[--json]   payments the bank never answered, which the service no longer asks about',
    options: { json: { type: 'boolean' } },
    async run(config, o) {
      const m = await modules();
      const waiting = await withDb(config, async (db) => {
        const found: Payment[] = [];
        for (const payment of await m.payments.unconfirmedPaymentsNeverNamed(db, UNANSWERED_SHOWN))
          if (await waitsForWord(m, db, payment)) found.push(payment);
        return found.map(shown);
      });
      const lines = waiting.map(
        (p) =>
          `${p.id}  ${p.merchant_id}  ${p.mode}  ${p.kind}  ${p.amount}  ${p.particulars}  ${p.bank_id}  sent ${p.submitted_at ?? p.created_at}`,
      );
      print(
        { payments: waiting },
        o.json,
        lines.length > 0 ? lines.join('\n') : 'no payment waits for the bank’s word',
      );
      return 0;
    },
  },
  'payments settle': {
    usage:
      'PAYMENT_ID --outcome successful|failed [--bank-payment-id ID] [--reason snake_case] [--json]   record the bank’s word on a payment it never answered',
    options: {
      outcome: { type: 'string' },
      'bank-payment-id': { type: 'string' },
      reason: { type: 'string' },
      json: { type: 'boolean' },
    },
    async run(config, o, positionals) {
      const id = positionals[0];
      if (!id) throw new Error('payments settle needs a payment id (payment_…)');
      if (o.outcome !== 'successful' && o.outcome !== 'failed')
        throw new Error('--outcome must be successful (the bank made it) or failed (the bank did not)');
      const m = await modules();
      if (o.outcome === 'successful' && o.reason !== undefined)
        throw new Error('--reason is for a payment the bank did not make (--outcome failed)');
      if (o.outcome === 'failed' && o['bank-payment-id'] !== undefined)
        throw new Error('--bank-payment-id is for a payment the bank made (--outcome successful)');
      const reason = o.reason ?? 'not_made_by_bank';
      if (!m.rules.BANK_WORD_REASON.test(reason))
        throw new Error(`--reason must be snake_case, at most 40 characters (e.g. not_made_by_bank), not ${reason}`);
      const bankPaymentId = o['bank-payment-id']?.trim() || null;
      if (bankPaymentId !== null && bankPaymentId.length > 128)
        throw new Error('--bank-payment-id is at most 128 characters');
      const word =
        o.outcome === 'successful'
          ? { status: 'successful' as const, bankPaymentId }
          : { status: 'failed' as const, reason };

      const settled = await withDb(config, async (db) => {
        const payment = await m.payments.findPaymentById(db, id);
        if (!payment) throw new Error(`no payment ${id}`);
        const deps = { store: storeOf(db), db, clock: systemClock };
        const now = await nowFor(m, db, payment);
        const settle = payment.subscription_id
          ? m.charges.settleChargeByHand
          : payment.recurring_consent_id
            ? m.executions.settleExecutionByHand
            : m.oneOff.settleOneOffByHand;
        const done = await settle(deps, id, word, now, operator());
        if (!done)
          throw new Error(
            `payment ${id} is ${payment.status}${payment.bank_payment_id ? `, named by the bank as ${payment.bank_payment_id}` : ''}: it does not wait for the bank’s word (\`payments unanswered\` lists those that do); nothing was changed`,
          );
        return done;
      });
      print(
        { payment: shown(settled) },
        o.json,
        `payment ${settled.id} is ${settled.status}${settled.failure_reason ? ` (${settled.failure_reason})` : ''}; recorded as the operator’s change in the merchant’s audit trail`,
      );
      return 0;
    },
  },
};
