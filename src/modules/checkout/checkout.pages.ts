import { displayAmount } from '../../shared/money.ts';
import { banksFor } from '../payments/payments.banks.ts';
import { boundsOf } from '../payments/payments.rules.ts';
import {
  boundsText,
  detailFieldsOf,
  buyerDetailsNeeded,
  postedAmount,
  collectsDetails,
  suggestionsOf,
  type FieldError,
  type FormValues,
} from './checkout.form.ts';
import { strategyFor, type CheckoutStrategies } from './checkout.strategies.ts';
import type { SetUpView } from '../manifest.ts';
import { render } from './checkout.views.ts';
import { newSubmissionNonce } from './checkout.service.ts';
import type { Deps } from '../context.ts';
import type { RequestRow } from '../requests/requests.tables.ts';
import type { PaymentRow } from '../payments/payments.tables.ts';

// View models for each page, rendered through the templates. Nothing here touches the database.

export type PageContext = {
  request: RequestRow;
  merchantName: string;
  embedOrigin: string | null;
  /** The merchant issues tax invoices: over $1,000 the page asks for the buyer's name and address. */
  issuesTaxInvoices?: boolean;
};

function base(ctx: PageContext, page: string, title: string) {
  const { request } = ctx;
  return {
    page,
    title,
    merchantName: ctx.merchantName,
    testMode: request.mode === 'test',
    requestId: request.id,
    /** payment | recurring | subscription: the script words the widget's waiting state and messages by it. */
    kind: request.kind,
    embedOrigin: ctx.embedOrigin,
    logoUrl: request.logo_image_url ? `/pay/${request.id}/logo` : null,
    bannerUrl: request.banner_image_url ? `/pay/${request.id}/banner` : null,
    paymentId: null as string | null,
    status: null as string | null,
  };
}

export function withEmbed(path: string, embedOrigin: string | null): string {
  if (!embedOrigin) return path;
  return `${path}${path.includes('?') ? '&' : '?'}embed_origin=${encodeURIComponent(embedOrigin)}`;
}

export function payPage(
  deps: Deps,
  strategies: CheckoutStrategies,
  ctx: PageContext,
  values: FormValues = {},
  errors: FieldError[] = [],
): string {
  const { request } = ctx;
  const strategy = strategyFor(strategies, request);
  const errorOf = (field: string) => errors.find((e) => e.field === field)?.message ?? null;
  const dynamic =
    request.kind === 'payment' && request.amount_cents === null
      ? (() => {
          const { min, max } = boundsOf({
            fixedCents: null,
            minCents: request.min_payment_cents,
            maxCents: request.max_payment_cents,
          });
          return {
            bounds: boundsText(request),
            min,
            max,
            suggestions: suggestionsOf(request).map((cents) => ({
              value: (cents / 100).toFixed(2),
              label: displayAmount(cents),
              checked: values.amount_choice === (cents / 100).toFixed(2),
            })),
          };
        })()
      : null;
  const buyer = buyerDetailsNeeded(request, postedAmount(values), ctx.issuesTaxInvoices === true);
  const fields = detailFieldsOf(request, buyer);
  const donation = request.kind === 'payment' && request.is_donation === 1;
  const summary = strategy.summary(request);
  return render('pay', {
    buyer,
    // A page with errors says so first in its title, the first thing a screen reader reads after the post.
    ...base(ctx, 'pay', errors.length ? `Error: ${request.message}` : request.message),
    message: request.message,
    kindLabel: donation ? `Donation to ${ctx.merchantName}` : null,
    summary: donation ? { ...summary, action: 'Donate' } : summary,
    unavailable: strategy.unavailable(request),
    banks: banksFor(deps, request.mode as 'live' | 'test'),
    dynamic,
    details: request.kind === 'payment' && collectsDetails(fields) ? fields : null,
    values,
    errors,
    fieldError: errorOf,
    describe: (name: string, ...extra: string[]) => {
      const ids = [...(errorOf(name) ? [`${name}-error`] : []), ...extra];
      return `${ids.length ? ` aria-describedby="${ids.join(' ')}"` : ''}${errorOf(name) ? ' aria-invalid="true"' : ''}`;
    },
    formAction: withEmbed(`/pay/${request.id}`, ctx.embedOrigin),
    // One per rendering: the form sent twice (a double click) starts one payment.
    nonce: newSubmissionNonce(),
    qrData: request.qr_data,
  });
}

type Link = { href: string; label: string; primary?: boolean; top?: boolean };
type StatusView = {
  heading: string;
  paragraphs: string[];
  tone: 'good' | 'bad' | 'wait' | 'info';
  links?: Link[];
  pending?: boolean;
};

export function statusPage(
  ctx: PageContext,
  title: string,
  view: StatusView,
  extra: Partial<ReturnType<typeof base>> & { close?: boolean } = {},
): string {
  return render('status', {
    ...base(ctx, extra.page ?? 'status', title),
    ...extra,
    links: [],
    pending: false,
    ...view,
  });
}

/**
 * What the payer's bank said about setting up a recurring consent or a subscription, carried on the
 * redirect back to the request's page (`?outcome=`): one of these words, anything else is ignored.
 */
export const SET_UP_OUTCOMES = ['authorised', 'declined', 'failed'] as const;
export type SetUpOutcome = (typeof SET_UP_OUTCOMES)[number];

export function parseSetUpOutcome(value: unknown): SetUpOutcome | null {
  return SET_UP_OUTCOMES.find((outcome) => outcome === value) ?? null;
}

/** The outcome word of a return that set up (or did not set up) a consent or subscription. */
export function setUpOutcomeOf(status: string): SetUpOutcome {
  return status === 'successful' ? 'authorised' : status === 'cancelled' ? 'declined' : 'failed';
}

/**
 * The page for a request that cannot take payments (paid, expired, deleted); `setUp` when it set up a
 * consent or subscription. `justSetUp` when the payer has just come back from approving it at the bank,
 * and inside the widget: the page then reports the outcome (to the embedding page, once per frame, or
 * to the widget that opened the bank tab).
 */
export function closedRequestPage(
  ctx: PageContext,
  status: string,
  setUp: SetUpView | null = null,
  justSetUp = false,
): string {
  const merchant = ctx.merchantName;
  if (status === 'paid' && setUp) {
    return statusPage(
      ctx,
      setUp.heading,
      {
        tone: 'good',
        heading: setUp.heading,
        paragraphs: setUp.paragraphs,
        links: [
          { href: '/customer', label: 'Manage what you agreed to', primary: true, top: ctx.embedOrigin !== null },
        ],
      },
      justSetUp ? { page: 'set-up', status: 'successful' } : {},
    );
  }
  if (status === 'paid') {
    return statusPage(ctx, 'Already paid', {
      tone: 'good',
      heading: 'This request has been paid',
      paragraphs: [`${merchant} has already received this payment. There is nothing more to pay.`],
    });
  }
  if (status === 'expired') {
    return statusPage(ctx, 'Expired', {
      tone: 'info',
      heading: 'This payment request has expired',
      paragraphs: [`It can no longer be paid. Please ask ${merchant} for a new link.`],
    });
  }
  return statusPage(ctx, 'No longer available', {
    tone: 'info',
    heading: 'This payment request is no longer available',
    paragraphs: [
      `${merchant} has cancelled it, so it cannot be paid. Please contact them if you think this is a mistake.`,
    ],
  });
}

/** A recurring consent or subscription the payer declined at the bank, or the bank could not set up. */
export function notSetUpPage(ctx: PageContext, outcome: Exclude<SetUpOutcome, 'authorised'>): string {
  const subscription = ctx.request.kind === 'subscription';
  const heading = subscription ? 'Subscription not set up' : 'Regular payments not authorised';
  const first =
    outcome === 'declined'
      ? 'You declined at your bank.'
      : `Your bank could not set up ${subscription ? 'the subscription' : 'the payment authority'}.`;
  return statusPage(
    ctx,
    heading,
    {
      tone: 'bad',
      heading,
      paragraphs: [`${first} Nothing was set up and no money moved.`],
      links: [{ href: withEmbed(`/pay/${ctx.request.id}`, ctx.embedOrigin), label: 'Try again', primary: true }],
    },
    { page: 'set-up', status: outcome === 'declined' ? 'cancelled' : 'failed' },
  );
}

export function bankErrorPage(ctx: PageContext, message: string): string {
  return statusPage(ctx, 'Bank unavailable', {
    tone: 'bad',
    heading: 'We could not reach your bank',
    paragraphs: [
      'No money has left your account. Please try again in a moment, or choose another bank.',
      `Your bank said: ${message}`,
    ],
    links: [{ href: withEmbed(`/pay/${ctx.request.id}`, ctx.embedOrigin), label: 'Try again', primary: true }],
  });
}

/** Where the payer goes next after a final outcome: the merchant's URL with request_id, payment_id and status. */
export function merchantRedirect(request: RequestRow, payment: Pick<PaymentRow, 'id' | 'status'>): string | null {
  const target =
    payment.status === 'successful'
      ? request.success_redirect_url
      : payment.status === 'failed' || payment.status === 'cancelled'
        ? request.failure_redirect_url
        : null;
  if (!target) return null;
  const url = new URL(target);
  url.searchParams.set('request_id', request.id);
  url.searchParams.set('payment_id', payment.id);
  url.searchParams.set('status', payment.status);
  return url.toString();
}

function cancelledReason(reason: string | null): string {
  if (reason?.startsWith('declined')) return 'You declined the payment at your bank. No money has left your account.';
  if (reason?.startsWith('abandoned')) return 'The payment was not approved in time. No money has left your account.';
  if (reason === 'request_already_paid')
    return 'Someone else paid this request first, so your bank was not asked to pay. No money has left your account.';
  return 'The payment was cancelled. No money has left your account.';
}

export function resultPage(ctx: PageContext, payment: PaymentRow, requestStillOpen: boolean, inPopup: boolean): string {
  const { request } = ctx;
  const amount = displayAmount(payment.amount_cents);
  const testNote =
    payment.mode === 'test'
      ? [`Test mode: only ${displayAmount(payment.settled_cents)} moved, into the service's test account.`]
      : [];
  const links: Link[] = [];
  const onward = merchantRedirect(request, payment);
  const back = inPopup ? null : onward;
  const retry =
    requestStillOpen && (payment.status === 'failed' || payment.status === 'cancelled')
      ? withEmbed(`/pay/${request.id}`, ctx.embedOrigin)
      : null;
  if (retry) links.push({ href: retry, label: 'Try again', primary: true });
  if (back)
    links.push({
      href: back,
      label: `Continue to ${ctx.merchantName}`,
      primary: !retry,
      top: ctx.embedOrigin !== null,
    });
  const popupNote = inPopup ? ['You can close this tab and return to the page you came from.'] : [];
  const extra = { page: 'result', paymentId: payment.id, status: payment.status, close: inPopup };
  switch (payment.status) {
    case 'successful':
      return statusPage(
        ctx,
        'Payment successful',
        {
          tone: 'good',
          heading: 'Payment successful',
          paragraphs: [
            `You paid ${amount} to ${ctx.merchantName}.`,
            `Your bank statement shows ${payment.particulars} ${payment.code}${payment.reference ? ` ${payment.reference}` : ''}.`,
            ...testNote,
            ...popupNote,
          ],
          links,
        },
        extra,
      );
    case 'failed':
      return statusPage(
        ctx,
        'Payment failed',
        {
          tone: 'bad',
          heading: 'Payment failed',
          paragraphs: ['Your bank did not complete the payment. No money has left your account.', ...popupNote],
          links,
        },
        extra,
      );
    case 'cancelled':
      return statusPage(
        ctx,
        'Payment cancelled',
        {
          tone: 'bad',
          heading: 'Payment cancelled',
          paragraphs: [cancelledReason(payment.failure_reason), ...popupNote],
          links,
        },
        extra,
      );
    case 'unconfirmed':
      return statusPage(
        ctx,
        'Waiting for your bank',
        {
          tone: 'wait',
          heading: 'Waiting for your bank to confirm',
          paragraphs: [
            'Your bank has accepted the payment but has not confirmed it yet. This usually takes a few minutes; do not pay again.',
          ],
          pending: true,
        },
        extra,
      );
    default:
      return statusPage(
        ctx,
        'Waiting for approval',
        {
          tone: 'wait',
          heading: 'Waiting for approval at your bank',
          paragraphs: ['Finish approving the payment in your bank. This page updates when you are done.'],
          pending: true,
        },
        extra,
      );
  }
}
