import type { PayHelper } from '../manifest.ts';
import { recordAuditAfter } from '../audit/audit.service.ts';
import { AppError, invalidParam } from '../../shared/errors.ts';
import { AMOUNT_FORM, parseAmount } from '../../shared/money.ts';
import { EMPTY_DETAILS, findCustInfoOfPayment, type PayerDetails } from '../customers/customers.service.ts';
import { completeOneOffReturn, notPayable, startOneOffPayment } from '../payments/one-off.service.ts';
import { bankReturnUrl, banksFor } from '../payments/payments.banks.ts';
import { presentPayment } from '../payments/payments.service.ts';
import { getRequest } from '../requests/requests.service.ts';
import { requireTestMode } from './clock.service.ts';
import { authoriseAtBank } from './pay.bank-driver.ts';
import type { PayBody } from './pay.schemas.ts';
import type { Ctx } from '../context.ts';
import type { RequestRow } from '../requests/requests.tables.ts';

// POST /v1/test-helpers/requests/{id}/pay: pays a test-mode request the way a payer does, through
// the same service functions, connector and sandbox bank (over HTTP), and returns the outcome.

export function detailsFromBody(body: PayBody): PayerDetails | null {
  if (!body.cust_info && body.marketing_opt_in === undefined) return null;
  const info = body.cust_info ?? {};
  const given = Object.fromEntries(Object.entries(info).filter(([, value]) => value !== undefined));
  return { ...EMPTY_DETAILS, ...given, marketing_opt_in: body.marketing_opt_in === true };
}

async function payOneOff(ctx: Ctx, request: RequestRow, body: PayBody) {
  let amountCents: number | null = null;
  if (body.amount !== undefined) {
    amountCents = parseAmount(body.amount);
    if (amountCents === null || amountCents === 0)
      throw invalidParam('amount', `amount must be ${AMOUNT_FORM}, more than 0.00 NZD`);
    if (request.amount_cents !== null && amountCents !== request.amount_cents) {
      throw invalidParam(
        'amount',
        'amount is only taken for requests with allow_dynamic_amount; this request has a fixed amount',
      );
    }
  } else if (request.amount_cents === null) {
    throw new AppError(
      'bad_request.missing_param.amount',
      'amount is required: this request lets the payer choose the amount',
      { field: 'amount' },
    );
  }
  const deps = ctx.deps;
  const bank = banksFor(deps, 'test')[0];
  if (!bank) throw new AppError('service_unavailable', 'No bank is connected, so the sandbox bank cannot be used', {});
  const started = await startOneOffPayment(deps, request, {
    amountCents,
    bankId: bank.id,
    details: detailsFromBody(body),
    channel: 'api',
  });
  let payment = started.payment;
  if (started.ok) {
    const back = await authoriseAtBank(started.redirectUrl, body.outcome ?? 'approve', bankReturnUrl(deps));
    payment =
      (await completeOneOffReturn(deps, {
        state: back.searchParams.get('state') ?? '',
        code: back.searchParams.get('code'),
        error: back.searchParams.get('error'),
      })) ?? payment;
  }
  return { payment: presentPayment(payment, await findCustInfoOfPayment(deps.db, payment.id)) };
}

export async function payRequestAsPayer(
  ctx: Ctx,
  helpers: ReadonlyMap<string, PayHelper>,
  requestId: string,
  body: PayBody,
) {
  requireTestMode(ctx);
  const request = await getRequest(ctx.db, { userId: ctx.merchant.id, mode: ctx.mode }, requestId);
  const problem = notPayable(request, ctx.clock.now());
  if (problem) throw problem;
  const helper = request.kind === 'payment' ? null : helpers.get(request.kind);
  if (request.kind !== 'payment' && !helper) {
    throw new AppError('conflict.invalid_state', `The pay test helper does not take ${request.kind} requests yet`, {
      status: request.status,
      kind: request.kind,
    });
  }
  const paid = helper ? await helper(ctx, request, body) : await payOneOff(ctx, request, body);
  // Recorded once the payer's part (through the checkout and the sandbox bank) has run.
  await recordAuditAfter(ctx, 'request.test_pay', request.id, { outcome: body.outcome ?? 'approve' });
  return paid;
}
