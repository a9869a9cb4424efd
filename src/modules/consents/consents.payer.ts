import { notFound } from '../../shared/errors.ts';
import { paymentLine, type PaymentLine } from '../payments/payments.payer.ts';
import { describeMoment } from '../../shared/zone.ts';
import { merchantContact } from '../merchants/merchants.service.ts';
import { paymentsUnder } from '../payments/payments.service.ts';
import { clockOf } from '../merchants/merchants.clock.ts';
import { anyConsentOfEmail, consentsOfEmail, findConsentById, type ConsentRow } from './consents.repo.ts';
import { limitsOf } from './consents.rules.ts';
import { consentObject, revokeConsentByPayer } from './consents.service.ts';
import { describeLimits } from './limits.ts';
import { isIdOf } from '../../shared/ids.ts';
import type { Deps, Origin } from '../context.ts';

// Recurring consents as their payer sees them in the payer dashboard: every one registered to
// their email, across merchants and modes. Another payer's consent is unknown (404).

export type PayerConsent = {
  id: string;
  /** What it is for (the request's message): its title. */
  title: string;
  merchant: string;
  test: boolean;
  status: string;
  agreed: string;
  /** What is left of the per-period limit now, and when the period ends; null once it is not active. */
  left: string | null;
  created: string;
  ended: string | null;
  payments: PaymentLine[];
};

const revokedByWords: Record<string, string> = { payer: 'you', merchant: 'the merchant', bank: 'your bank' };

async function view(deps: Deps, row: ConsentRow, withPayments: boolean): Promise<PayerConsent> {
  const zone = deps.config.serviceTimeZone;
  const now = (await clockOf(deps, row)).now();
  const object = await consentObject(deps.db, row, now, zone);
  const merchant = (await merchantContact(deps.db, row.user_id)).name;
  const active = object.status === 'active';
  return {
    id: row.id,
    title: row.description,
    merchant,
    test: row.mode === 'test',
    status: object.status,
    agreed: `${merchant} may take ${describeLimits(limitsOf(row), zone)}`,
    left: active
      ? `${object.usage.period.remaining.formatted} left until ${describeMoment(Date.parse(object.usage.period.end), zone)}`
      : null,
    created: describeMoment(row.created_at, zone),
    ended:
      row.revoked_at !== null
        ? `Revoked by ${revokedByWords[row.revoked_by ?? ''] ?? 'the bank'} on ${describeMoment(row.revoked_at, zone)}`
        : object.status === 'expired'
          ? 'Ended: its end date has passed, or its total was reached'
          : null,
    payments: withPayments
      ? (await paymentsUnder(deps.db, { recurringConsentId: row.id })).map((p) => paymentLine(p, zone))
      : [],
  };
}

export async function consentsOfPayer(deps: Deps, email: string): Promise<PayerConsent[]> {
  const rows = await consentsOfEmail(deps.db, email);
  return Promise.all(rows.map((row) => view(deps, row, false)));
}

async function ownConsent(deps: Deps, email: string, id: string): Promise<ConsentRow> {
  const row = isIdOf('recurring', id) ? await findConsentById(deps.db, id) : undefined;
  if (!row || row.email !== email) throw notFound('recurring_consent', id);
  return row;
}

export async function consentOfPayer(deps: Deps, email: string, id: string): Promise<PayerConsent> {
  return view(deps, await ownConsent(deps, email, id), true);
}

/** The payer revokes: the same operation as the payer test helper (recurring_payment.revoked, and at the bank). */
export async function revokeConsentForPayer(deps: Deps, email: string, id: string, origin?: Origin): Promise<void> {
  await ownConsent(deps, email, id);
  await revokeConsentByPayer(deps, id, { actor: { kind: 'payer', email }, origin });
}

/** Whether any recurring consent is registered to this email (a sign-in code is only worth sending then). */
export async function payerHasConsents(deps: Deps, email: string): Promise<boolean> {
  return anyConsentOfEmail(deps.db, email);
}
