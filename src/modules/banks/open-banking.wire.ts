import { Type, type Static } from 'typebox';

// The wire shapes of the NZ payment-initiation standard as the sandbox bank and the connector
// speak them. Both sides import these, so the contract has one definition.

export const AmountPattern = '^(0|[1-9][0-9]{0,12})\\.[0-9]{2}$';

export const ActiveOrHistoricCurrencyAndAmount = Type.Object({
  Amount: Type.String({ pattern: AmountPattern, description: 'Decimal with two places, e.g. "12.50"' }),
  Currency: Type.Literal('NZD'),
});
export type ActiveOrHistoricCurrencyAndAmount = Static<typeof ActiveOrHistoricCurrencyAndAmount>;

export const CreditorAccount = Type.Object({
  SchemeName: Type.Literal('BECSElectronicCredit'),
  Identification: Type.String({ pattern: '^\\d{2}-\\d{4}-\\d{7}-\\d{2,3}$', description: 'NZ account number 12-3456-7890123-00' }),
  Name: Type.String({ minLength: 1, maxLength: 70 }),
});
export type CreditorAccount = Static<typeof CreditorAccount>;

/** The NZ statement block: particulars, code and reference, each at most 12 characters. */
export const StatementReference = Type.Object({
  Particulars: Type.String({ maxLength: 12 }),
  Code: Type.String({ maxLength: 12 }),
  Reference: Type.String({ maxLength: 12 }),
});
export type StatementReference = Static<typeof StatementReference>;

export const RemittanceInformation = Type.Object({
  Reference: Type.Object({
    CreditorName: Type.Optional(Type.String({ maxLength: 70 })),
    CreditorReference: StatementReference,
    DebtorReference: Type.Optional(StatementReference),
  }),
});
export type RemittanceInformation = Static<typeof RemittanceInformation>;

export const DomesticInitiation = Type.Object({
  InstructionIdentification: Type.String({ minLength: 1, maxLength: 35 }),
  EndToEndIdentification: Type.String({ minLength: 1, maxLength: 35 }),
  InstructedAmount: ActiveOrHistoricCurrencyAndAmount,
  CreditorAccount,
  RemittanceInformation,
});
export type DomesticInitiation = Static<typeof DomesticInitiation>;

export const Risk = Type.Object({}, { description: 'Risk indicators; the sandbox bank ignores them' });

export const DomesticConsentRequest = Type.Object({
  Data: Type.Object({ Initiation: DomesticInitiation }),
  Risk,
});
export type DomesticConsentRequest = Static<typeof DomesticConsentRequest>;

export const EnduringPeriods = ['Day', 'Week', 'Fortnight', 'Month', 'Quarter', 'Year'] as const;

export const EnduringConsentRequest = Type.Object({
  Data: Type.Object({
    FromDateTime: Type.String({ format: 'date-time' }),
    ToDateTime: Type.Optional(Type.String({ format: 'date-time' })),
    MaximumAmount: Type.Optional(ActiveOrHistoricCurrencyAndAmount),
    Frequency: Type.Object({
      Period: Type.Union(EnduringPeriods.map((p) => Type.Literal(p))),
      TotalAmount: ActiveOrHistoricCurrencyAndAmount,
      TotalCount: Type.Optional(Type.Integer({ minimum: 1 })),
    }),
    TotalCount: Type.Optional(Type.Integer({ minimum: 1 })),
    TotalAmount: Type.Optional(ActiveOrHistoricCurrencyAndAmount),
    Initiation: Type.Object({ CreditorAccount, RemittanceInformation }),
  }),
  Risk,
});
export type EnduringConsentRequest = Static<typeof EnduringConsentRequest>;

export const DomesticPaymentRequest = Type.Object({
  Data: Type.Object({ ConsentId: Type.String({ minLength: 1, maxLength: 128 }), Initiation: DomesticInitiation }),
  Risk,
});
export type DomesticPaymentRequest = Static<typeof DomesticPaymentRequest>;

export const ConsentStatuses = ['AwaitingAuthorisation', 'Authorised', 'Rejected', 'Consumed', 'Revoked', 'Expired'] as const;
export type ConsentStatus = (typeof ConsentStatuses)[number];
export const PaymentStatuses = ['Pending', 'AcceptedSettlementInProcess', 'AcceptedSettlementCompleted', 'Rejected'] as const;
export type PaymentStatus = (typeof PaymentStatuses)[number];

export type StatusReason = { StatusReasonCode: string; StatusReasonDescription: string };

export type ConsentResponse = {
  Data: Record<string, unknown> & { ConsentId: string; Status: ConsentStatus; CreationDateTime: string; StatusUpdateDateTime: string };
  Risk: Record<string, unknown>;
  Links: { Self: string };
  Meta: Record<string, unknown>;
};

export type DomesticPaymentResponse = {
  Data: {
    DomesticPaymentId: string;
    ConsentId: string;
    CreationDateTime: string;
    Status: PaymentStatus;
    StatusUpdateDateTime: string;
    StatusReason?: StatusReason[];
    Initiation: DomesticInitiation;
  };
  Links: { Self: string };
  Meta: Record<string, unknown>;
};

export type BankErrorBody = { Code: string; Id?: string; Message: string; Errors: Array<{ ErrorCode: string; Message: string; Path?: string }> };

/** Header carrying the caller's clock, honoured by the sandbox bank only. */
export const SANDBOX_TIME_HEADER = 'x-sandbox-time';

/** Reasons travel as PascalCase status reason codes: insufficient_funds <-> InsufficientFunds. */
export function reasonToCode(reason: string): string {
  return reason.split('_').map((part) => part.charAt(0).toUpperCase() + part.slice(1)).join('');
}
export function codeToReason(code: string): string {
  return code.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();
}
