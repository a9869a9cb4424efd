import { AppError } from '../../shared/errors.ts';
import { findPaymentById } from '../payments/payments.service.ts';
import { banksFor } from '../payments/payments.banks.ts';
import { effectiveStatus } from '../payments/payments.rules.ts';
import { clockOf } from '../merchants/merchants.clock.ts';
import { findRequestById } from '../requests/requests.service.ts';
import { merchantIssuesTaxInvoices } from '../receipts/receipts.service.ts';
import { parseCheckoutForm, type FieldError, type FormValues } from './checkout.form.ts';
import { completeReturn, strategyFor, type CheckoutStrategies } from './checkout.strategies.ts';
import type { ReturnInput, ReturnOutcome, SetUpView } from '../manifest.ts';
import { isIdOf } from '../../shared/ids.ts';
import type { Deps } from '../context.ts';
import type { RequestRow } from '../requests/requests.tables.ts';
import type { PaymentRow } from '../payments/payments.tables.ts';
import { merchantContact } from '../merchants/merchants.service.ts';

// The public side of a request: what the payer's browser can see and do with only the request id
// (an unguessable capability) and, on return from the bank, the state the bank hands back.

export type LoadedRequest = {
  request: RequestRow;
  merchantName: string;
  status: string;
  /** The merchant issues tax invoices (a one-off payment over $1,000 then needs the buyer's name and address). */
  issuesTaxInvoices?: boolean;
};

export async function loadRequest(deps: Deps, id: string): Promise<LoadedRequest | null> {
  if (!isIdOf('request', id)) return null;
  const request = await findRequestById(deps.db, id);
  if (!request) return null;
  const merchant = await merchantContact(deps.db, request.user_id);
  const clock = await clockOf(deps, request);
  return {
    request,
    merchantName: merchant.name,
    status: effectiveStatus(request, clock.now()),
    issuesTaxInvoices: request.kind === 'payment' && (await merchantIssuesTaxInvoices(deps.db, request.user_id)),
  };
}

export type SubmitOutcome =
  | { kind: 'invalid'; errors: FieldError[] }
  | { kind: 'closed'; status: string }
  | { kind: 'redirect'; url: string; paymentId: string | null }
  | { kind: 'bank_error'; message: string; paymentId: string | null };

/** The payer submitted the page: start the payment (or say what to fix). */
export async function submitCheckout(
  deps: Deps,
  strategies: CheckoutStrategies,
  loaded: LoadedRequest,
  values: FormValues,
  channel: 'page' | 'embed',
): Promise<SubmitOutcome> {
  const { request } = loaded;
  if (loaded.status !== 'active') return { kind: 'closed', status: loaded.status };
  const strategy = strategyFor(strategies, request);
  const unavailable = strategy.unavailable(request);
  if (unavailable) return { kind: 'bank_error', message: unavailable, paymentId: null };
  const banks = banksFor(deps, request.mode as 'live' | 'test').map((bank) => bank.id);
  const parsed = parseCheckoutForm(request, values, banks, loaded.issuesTaxInvoices === true);
  if (!parsed.ok) return { kind: 'invalid', errors: parsed.errors };
  try {
    const started = await strategy.start(deps, request, {
      amountCents: parsed.amountCents,
      bankId: parsed.bankId,
      details: parsed.details,
      channel,
    });
    return started.ok
      ? { kind: 'redirect', url: started.redirectUrl, paymentId: started.paymentId }
      : { kind: 'bank_error', message: started.message, paymentId: started.paymentId };
  } catch (error) {
    // The request changed state between showing the page and this submission.
    if (error instanceof AppError && error.code === 'conflict.invalid_state')
      return { kind: 'closed', status: String(error.params.status) };
    if (error instanceof AppError && error.code.startsWith('bad_request')) {
      return {
        kind: 'invalid',
        errors: [{ field: error.code.includes('amount') ? 'amount_other' : 'bank', message: error.message }],
      };
    }
    throw error;
  }
}

export async function returnFromBank(
  deps: Deps,
  strategies: CheckoutStrategies,
  input: ReturnInput,
): Promise<ReturnOutcome | null> {
  if (typeof input.state !== 'string' || input.state === '' || input.state.length > 200) return null;
  return completeReturn(strategies, deps, input);
}

/** A payment of this request, for the result page and the status endpoint. */
export async function paymentOfRequest(deps: Deps, requestId: string, paymentId: unknown): Promise<PaymentRow | null> {
  if (!isIdOf('payment', paymentId)) return null;
  const payment = await findPaymentById(deps.db, paymentId);
  return payment && payment.request_id === requestId ? payment : null;
}

/** What a paid recurring or subscription request set up, in the payer's words; null for one-off payments. */
export async function setUpViewOf(
  deps: Deps,
  strategies: CheckoutStrategies,
  loaded: LoadedRequest,
): Promise<SetUpView | null> {
  if (loaded.status !== 'paid') return null;
  const strategy = strategyFor(strategies, loaded.request);
  return strategy.setUpView ? strategy.setUpView(deps, loaded.request, loaded.merchantName) : null;
}
