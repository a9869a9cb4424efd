import path from 'node:path';
import type { FastifyReply } from 'fastify';
import { contentSecurityPolicy, sendPage as sendWithPolicy, styleNonce, templatesIn } from '../http/pages.ts';
import { inZone } from '../shared/zone.ts';
import { displayAmount } from '../shared/money.ts';
import type { ConsentRow } from './sandbox.repo.ts';

// The bank's own pages: server-rendered with auto-escaping (the page kit's set-up), inline styles
// under a per-response nonce, no scripts, no external assets, and forms that work without
// JavaScript. It sets its own page headers too: the sandbox bank also runs as its own server.

const templates = templatesIn(path.join(import.meta.dirname, 'views'));

export function sendPage(
  reply: FastifyReply,
  status: number,
  view: 'login' | 'consent' | 'message',
  data: Record<string, unknown>,
  formTarget?: string,
): FastifyReply {
  const nonce = styleNonce();
  const policy = contentSecurityPolicy({
    styles: { nonce },
    images: true,
    formsTo: formTarget ? [new URL(formTarget).origin] : [],
  });
  reply
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('cache-control', 'no-store');
  return sendWithPolicy(reply, status, templates.render(view, { ...data, nonce }), policy);
}

const periodLabels: Record<string, string> = {
  Day: 'day',
  Week: 'week (Monday to Sunday)',
  Fortnight: 'fortnight',
  Month: 'calendar month',
  Year: 'year',
};

function localDate(ms: number, zone: string): string {
  return inZone(ms, zone).toFormat('d LLLL yyyy, h:mm a');
}

/** What the payer is approving, as label/value rows. */
export function consentRows(consent: ConsentRow, zone: string): Array<[string, string]> {
  const rows: Array<[string, string]> = [];
  if (consent.kind === 'domestic') {
    rows.push(['Amount', `${displayAmount(consent.amount_cents!)} NZD`]);
  } else {
    if (consent.max_per_payment_cents !== null)
      rows.push(['Each payment', `up to ${displayAmount(consent.max_per_payment_cents)}`]);
    rows.push([
      `Each ${periodLabels[consent.period!] ?? consent.period}`,
      `up to ${displayAmount(consent.max_per_period_cents!)}`,
    ]);
    if (consent.max_count_per_period !== null)
      rows.push(['Payments per period', `at most ${consent.max_count_per_period}`]);
    if (consent.total_count !== null) rows.push(['Number of payments', `at most ${consent.total_count}`]);
    if (consent.total_amount_cents !== null)
      rows.push(['Total of all payments', `up to ${displayAmount(consent.total_amount_cents)}`]);
    rows.push(['Starting', localDate(consent.from_at!, zone)]);
    rows.push(['Ending', consent.to_at === null ? 'when you or the payee cancel' : localDate(consent.to_at, zone)]);
  }
  rows.push(['Pay to', consent.creditor_name]);
  rows.push(['Account', consent.creditor_account]);
  // An enduring consent has no statement block: each payment brings its own.
  if (consent.kind === 'domestic') {
    rows.push(['Particulars', consent.particulars]);
    rows.push(['Code', consent.code]);
    rows.push(['Reference', consent.reference || '(none)']);
  }
  return rows;
}
