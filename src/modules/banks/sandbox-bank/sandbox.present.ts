import { centsToDecimal } from '../../../shared/money.ts';
import { iso } from '../../../shared/time.ts';
import { reasonToCode, type ActiveOrHistoricCurrencyAndAmount, type ConsentResponse, type ConsentStatus, type DomesticPaymentResponse, type PaymentStatus } from '../open-banking.wire.ts';
import type { ConsentRow, PaymentRow } from './sandbox.repo.ts';

// Rows to the standard's bodies: the only code of the sandbox bank that knows the wire shape.

export function money(cents: number): ActiveOrHistoricCurrencyAndAmount {
  return { Amount: centsToDecimal(cents), Currency: 'NZD' };
}

export function presentConsent(row: ConsentRow, status: ConsentStatus, self: string): ConsentResponse {
  const sent = JSON.parse(row.request_body) as Record<string, unknown>;
  return {
    Data: {
      ConsentId: row.id,
      CreationDateTime: iso(row.created_at),
      Status: status,
      StatusUpdateDateTime: iso(row.status_updated_at),
      ...sent,
    },
    Risk: {},
    Links: { Self: self },
    Meta: {},
  };
}

const descriptions: Record<string, string> = {
  insufficient_funds: 'The payer account has insufficient funds',
  fraud_check: 'The payment was stopped by a fraud check',
  consent_revoked: 'The payer revoked the consent',
  declined: 'The bank declined the payment',
};

export function presentPayment(row: PaymentRow, self: string): DomesticPaymentResponse {
  const sent = JSON.parse(row.request_body) as { Data: { Initiation: DomesticPaymentResponse['Data']['Initiation'] } };
  return {
    Data: {
      DomesticPaymentId: row.id,
      ConsentId: row.consent_id,
      CreationDateTime: iso(row.created_at),
      Status: row.status as PaymentStatus,
      StatusUpdateDateTime: iso(row.updated_at),
      ...(row.status_reason && {
        StatusReason: [{ StatusReasonCode: reasonToCode(row.status_reason), StatusReasonDescription: descriptions[row.status_reason] ?? row.status_reason.replace(/_/g, ' ') }],
      }),
      Initiation: sent.Data.Initiation,
    },
    Links: { Self: self },
    Meta: {},
  };
}
