import path from 'node:path';
import { templatesIn } from '../../http/pages.ts';

// Every message Tono sends, as a template pair (templates/<name>.text.eta and .html.eta) and a
// subject. The data is what the caller knew when it queued the message; `link` (the payer
// dashboard, or the merchant's webhooks) is added when it is rendered.

export type TemplateData = {
  payer_code: { code: string; minutes: number };
  /** Sign-in with the payer's email paused after too many wrong codes, until `until` (a date and time as the payer reads it). */
  payer_signin_paused: { until: string };
  consent_authorised: { merchant: string; title?: string; limits: string; test: boolean };
  subscription_set_up: { merchant: string; title?: string; plan: string; first_charge: string; test: boolean };
  charge_receipt: {
    merchant: string;
    /** What was paid for (the subscription's description); absent in mail queued before it was kept. */
    title?: string;
    amount: string;
    date: string;
    particulars: string;
    code: string;
    reference: string;
    test: boolean;
  };
  charge_failed: {
    merchant: string;
    title?: string;
    amount: string;
    date: string;
    retry: string | null;
    test: boolean;
  };
  subscription_ended: {
    merchant: string;
    title?: string;
    plan: string;
    how: 'cancelled' | 'completed';
    by: string | null;
    test: boolean;
  };
  consent_revoked: { merchant: string; title?: string; by: string; test: boolean };
  webhook_failing: { url: string; endpoint_id: string; since: string; test: boolean };
  webhook_disabled: { url: string; endpoint_id: string; since: string; test: boolean };
  merchant_password_reset: { token: string; minutes: number };
  team_invitation: { token: string; merchant: string; role: string; hours: number };
  refund_sent: RefundMail;
  refund_arrived: RefundMail;
  receipt: {
    merchant: string;
    /** The document as it was issued: the PDF prints the same lines (docs/receipts.md). */
    document: {
      title: string;
      number: string;
      supplier: string;
      lines: { label: string; value: string }[];
      notes: string[];
    };
    test: boolean;
    /** Whether the payer can download it in the payer dashboard (a payment under a recurring consent or a subscription). */
    dashboard: boolean;
  };
};

/** A refund, as the payer's email tells it (docs/refunds.md). */
type RefundMail = {
  merchant: string;
  title?: string;
  amount: string;
  /** What the payment was, and when it was made. */
  paid: string;
  paid_on: string;
  date: string;
  reason: string | null;
  /** The merchant paid it from its internet banking, not through Tono. */
  by_hand: boolean;
  particulars: string;
  code: string;
  reference: string;
  test: boolean;
  /**
   * Whether the payer can see it in the payer dashboard (a payment under a recurring consent or a
   * subscription); a one-off payer has nothing to sign in to, so the message carries no link.
   */
  dashboard?: boolean;
};
export type TemplateName = keyof TemplateData;
export const TEMPLATE_NAMES = [
  'payer_code',
  'payer_signin_paused',
  'consent_authorised',
  'subscription_set_up',
  'charge_receipt',
  'charge_failed',
  'subscription_ended',
  'consent_revoked',
  'webhook_failing',
  'merchant_password_reset',
  'team_invitation',
  'webhook_disabled',
  'refund_sent',
  'refund_arrived',
  'receipt',
] as const satisfies readonly TemplateName[];

/**
 * The messages to a payer that can be sent again from the dashboard (docs/email.md, "Sending a
 * message again"): what a payer was told about their payments and consents. A sign-in code, a
 * password reset or an invitation is never sent again (each carries a secret that works once), nor
 * a notice to the merchant.
 */
export const RESENDABLE_TO_PAYER: ReadonlySet<TemplateName> = new Set<TemplateName>([
  'consent_authorised',
  'subscription_set_up',
  'charge_receipt',
  'charge_failed',
  'subscription_ended',
  'consent_revoked',
  'refund_sent',
  'refund_arrived',
  'receipt',
]);

/** " for “Veg box”", or nothing for mail queued without a title. */
const forTitle = (d: { title?: string }) => (d.title ? ` for “${d.title}”` : '');
const named = (d: { title?: string }) => (d.title ? ` “${d.title}”` : '');

const subjects: { [K in TemplateName]: (data: TemplateData[K]) => string } = {
  payer_code: (d) => `Your Tono sign-in code: ${d.code}`,
  payer_signin_paused: () => 'Signing in to Tono with your email is paused',
  consent_authorised: (d) => `You authorised payments to ${d.merchant}${forTitle(d)}`,
  subscription_set_up: (d) => `Your subscription${named(d)} with ${d.merchant} is set up`,
  charge_receipt: (d) => `Receipt: ${d.amount} to ${d.merchant}${forTitle(d)}`,
  charge_failed: (d) => `A payment to ${d.merchant}${forTitle(d)} did not go through`,
  subscription_ended: (d) =>
    `Your subscription${named(d)} with ${d.merchant} has ${d.how === 'cancelled' ? 'been cancelled' : 'ended'}`,
  consent_revoked: (d) => `Your payment authority for ${d.merchant}${forTitle(d)} has been revoked`,
  webhook_failing: (d) => `Webhook deliveries to ${d.url} have failed for 24 hours`,
  webhook_disabled: (d) => `Webhook endpoint ${d.url} was disabled after 3 days of failed deliveries`,
  merchant_password_reset: () => 'Reset your Tono dashboard password',
  team_invitation: (d) => `You are invited to the Tono dashboard of ${d.merchant}`,
  refund_sent: (d) => `${d.merchant} is refunding you ${d.amount}`,
  refund_arrived: (d) => `Your refund of ${d.amount} from ${d.merchant} has arrived`,
  receipt: (d) => `${d.document.title} ${d.document.number} from ${d.document.supplier}`,
};

const views = path.join(import.meta.dirname, 'templates');
const html = templatesIn(views);
const text = templatesIn(views, { plainText: true });

export type RenderedMail = { subject: string; text: string; html: string };

/** The first line of a test-mode message's plain text, as its HTML opens with "Test mode. No real money moved." */
export const TEST_NOTICE = 'Test mode: no real money moved.';

/** A message's subject, without the test-mode mark. */
export function subjectOf<K extends TemplateName>(template: K, data: TemplateData[K]): string {
  return subjects[template](data as any);
}

export function renderMail<K extends TemplateName>(template: K, data: TemplateData[K], link: string): RenderedMail {
  const test = 'test' in data && data.test;
  const subject = `${test ? '[Test] ' : ''}${subjectOf(template, data)}`;
  const it = {
    ...data,
    link,
    subject,
    test,
    payer:
      template !== 'webhook_failing' &&
      template !== 'webhook_disabled' &&
      template !== 'merchant_password_reset' &&
      template !== 'team_invitation' &&
      !('dashboard' in data && data.dashboard === false),
  };
  // The HTML layout opens a test-mode message with the notice; the text bodies have no layout, so
  // it is put at their top here.
  return {
    subject,
    text: `${test ? `${TEST_NOTICE}\n\n` : ''}${text.render(`${template}.text.eta`, it).trim()}\n`,
    html: html.render(`${template}.html.eta`, it),
  };
}
