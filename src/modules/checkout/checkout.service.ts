import { AppError } from '../../shared/errors.ts';
import { findPaymentById } from '../payments/payments.service.ts';
import { banksFor } from '../payments/payments.banks.ts';
import { effectiveStatus } from '../payments/payments.rules.ts';
import { clockOf } from '../merchants/merchants.clock.ts';
import { findRequestById } from '../requests/requests.service.ts';
import { merchantIssuesTaxInvoices } from '../receipts/receipts.service.ts';
import { parseCheckoutForm, type FieldError, type FormValues } from './checkout.form.ts';
import { completeReturn, strategyFor, type CheckoutStrategies } from './checkout.strategies.ts';
import type { CheckoutStrategy, ReturnInput, ReturnOutcome, SetUpView, StartInput } from '../manifest.ts';
import { isIdOf } from '../../shared/ids.ts';
import type { Deps } from '../context.ts';
import type { RequestRow } from '../requests/requests.tables.ts';
import type { PaymentRow } from '../payments/payments.tables.ts';
import { merchantContact } from '../merchants/merchants.service.ts';
import { randomSecret } from '../../shared/crypto.ts';
import { idempotent, replayIfAnswered, type IdempotencyScope } from '../../http/idempotency.ts';

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
  // The page's form is sent once: a repeat of one rendering (a double click) answers as the first did.
  const once = await submissionOf(deps, request, values.nonce);
  if (once && !(await claimSubmission(once))) return answerOfFirst(once);
  let outcome: SubmitOutcome = STILL_STARTING;
  try {
    outcome = await startPayment(deps, strategy, request, {
      amountCents: parsed.amountCents,
      bankId: parsed.bankId,
      details: parsed.details,
      channel,
    });
    return outcome;
  } finally {
    if (once) await recordAnswer(once, outcome);
  }
}

async function startPayment(
  deps: Deps,
  strategy: CheckoutStrategy,
  request: RequestRow,
  input: StartInput,
): Promise<SubmitOutcome> {
  try {
    const started = await strategy.start(deps, request, input);
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

// One submission per rendering of the pay page: its form carries a random nonce, and the first post
// with it claims it (an idempotency row of the merchant's mode, src/http/idempotency.ts) before the
// payment is started, then keeps what it answered in a second row. A repeat (a double click, a
// reload of the post) waits for that answer and gives it again: the first payment's bank page.

const SUBMISSION_ENDPOINT = 'checkout POST /pay/:id';
/** How long a repeat waits for the first post of its form to finish starting the payment. */
const FIRST_ANSWER_WAIT_MS = 30_000;
const NONCE_SHAPE = /^[A-Za-z0-9_-]{22,64}$/;

/** What a repeat answers when the first post has not finished (or failed without an answer). */
const STILL_STARTING: SubmitOutcome = {
  kind: 'bank_error',
  message:
    'This payment was already sent to your bank from this page. Wait a moment, then open the payment link again.',
  paymentId: null,
};

/** A new nonce for one rendering of the pay page's form. */
export function newSubmissionNonce(): string {
  return randomSecret(18);
}

type Submission = { scope: IdempotencyScope; claim: string; answer: string };

async function submissionOf(deps: Deps, request: RequestRow, nonce: string | undefined): Promise<Submission | null> {
  if (!nonce || !NONCE_SHAPE.test(nonce)) return null;
  const scope: IdempotencyScope = {
    db: deps.db,
    clock: await clockOf(deps, request),
    merchant: { id: request.user_id },
    mode: request.mode as IdempotencyScope['mode'],
    deps: { secrets: deps.secrets },
  };
  const key = `checkout-${request.id}-${nonce}`;
  return { scope, claim: key, answer: `${key}-answer` };
}

/** Claims the submission for this post; false when another post of the same form claimed it first. */
async function claimSubmission(once: Submission): Promise<boolean> {
  const claimed = await idempotent(once.scope, once.claim, SUBMISSION_ENDPOINT, {}, 200, async () => ({
    claimed: true,
  }));
  return !claimed.replayed;
}

async function recordAnswer(once: Submission, outcome: SubmitOutcome): Promise<void> {
  await idempotent(once.scope, once.answer, SUBMISSION_ENDPOINT, {}, 200, async () => outcome);
}

/** What the first post of this form answered, once it has. */
async function answerOfFirst(once: Submission): Promise<SubmitOutcome> {
  const deadline = Date.now() + FIRST_ANSWER_WAIT_MS;
  for (;;) {
    const answered = await replayIfAnswered<SubmitOutcome>(once.scope, once.answer, SUBMISSION_ENDPOINT, {});
    if (answered) return answered.body;
    if (Date.now() >= deadline) return STILL_STARTING;
    await new Promise((resolve) => setTimeout(resolve, 50));
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
