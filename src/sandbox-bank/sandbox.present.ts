import { centsToDecimal } from '../shared/money.ts';
import { iso } from '../shared/time.ts';
import type {
  ActiveOrHistoricCurrencyAndAmount,
  ConsentResponse,
  ConsentStatus,
  DebtorAccountResponse,
  DomesticPaymentResponse,
  PaymentStatus,
} from '../shared/open-banking.wire.ts';
import type { ConsentRow, PayerRow, PaymentRow } from './sandbox.repo.ts';

// Rows to the standard's bodies: the only code of the sandbox bank that knows the wire shape.

export function money(cents: number): ActiveOrHistoricCurrencyAndAmount {
  return { Amount: centsToDecimal(cents), Currency: 'NZD' };
}

export function presentConsent(row: ConsentRow, status: ConsentStatus, self: string): ConsentResponse {
  const sent = JSON.parse(row.request_body) as { Consent: unknown };
  return {
    Data: {
      ConsentId: row.id,
      Status: status,
      CreationDateTime: iso(row.created_at),
      StatusUpdateDateTime: iso(row.status_updated_at),
      Consent: sent.Consent,
    },
    Risk: {},
    Links: { Self: self },
    Meta: {},
  };
}

export function presentPayment(row: PaymentRow, self: string): DomesticPaymentResponse {
  const sent = JSON.parse(row.request_body) as { Data: { Initiation: DomesticPaymentResponse['Data']['Initiation'] } };
  return {
    Data: {
      DomesticPaymentId: row.id,
      ConsentId: row.consent_id,
      CreationDateTime: iso(row.created_at),
      Status: row.status as PaymentStatus,
      StatusUpdateDateTime: iso(row.updated_at),
      Initiation: sent.Data.Initiation,
    },
    Risk: {},
    Links: { Self: self },
    Meta: {},
  };
}

export function presentDebtorAccount(payer: PayerRow, self: string): DebtorAccountResponse {
  return {
    Data: {
      DebtorAccount: {
        SchemeName: 'BECSElectronicCredit',
        Identification: payer.account_number,
        Name: payer.name.slice(0, 70),
      },
    },
    Links: { Self: self },
    Meta: {},
  };
}
