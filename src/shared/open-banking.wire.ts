import { Type, type Static } from 'typebox';

// The wire shapes of the NZ payment-initiation standard as the sandbox bank and the connector
// speak them. Both sides import these, so the contract has one definition.

export const AmountPattern = '^(0|[1-9][0-9]{0,12})\\.[0-9]{2}$';

const closed = { additionalProperties: false } as const;

export const ActiveOrHistoricCurrencyAndAmount = Type.Object(
  {
    Amount: Type.String({ pattern: AmountPattern, description: 'Decimal with two places, e.g. "12.50"' }),
    Currency: Type.Literal('NZD'),
  },
  closed,
);
export type ActiveOrHistoricCurrencyAndAmount = Static<typeof ActiveOrHistoricCurrencyAndAmount>;

/** The standard's NZ account number, 2-4-7-2: bank-branch-account-suffix, each zero-padded (12-0123-0012345-00). */
export const AccountNumberPattern = '^\\d{2}-\\d{4}-\\d{7}-\\d{2}$';

export const CreditorAccount = Type.Object(
  {
    SchemeName: Type.Literal('BECSElectronicCredit'),
    Identification: Type.String({
      pattern: AccountNumberPattern,
      maxLength: 34,
      description: 'NZ account number, 2-4-7-2: 12-3456-7890123-00',
    }),
    Name: Type.String({ minLength: 1, maxLength: 70 }),
    SecondaryIdentification: Type.Optional(Type.String({ minLength: 1, maxLength: 34 })),
  },
  closed,
);
export type CreditorAccount = Static<typeof CreditorAccount>;

export const DebtorAccount = Type.Object(
  {
    SchemeName: Type.Literal('BECSElectronicCredit'),
    Identification: Type.String({ minLength: 1, maxLength: 34 }),
    Name: Type.Optional(Type.String({ minLength: 1, maxLength: 70 })),
    SecondaryIdentification: Type.Optional(Type.String({ minLength: 1, maxLength: 34 })),
  },
  closed,
);
export type DebtorAccount = Static<typeof DebtorAccount>;

/** The NZ statement block: particulars, code and reference, each at most 12 characters. */
export const StatementReference = Type.Object(
  {
    Particulars: Type.Optional(Type.String({ maxLength: 12 })),
    Code: Type.Optional(Type.String({ maxLength: 12 })),
    Reference: Type.Optional(Type.String({ maxLength: 12 })),
  },
  closed,
);
export type StatementReference = Static<typeof StatementReference>;

/** The standard's BECS statement names are at most 20 characters. */
export const STATEMENT_NAME_MAX = 20;

export const RemittanceInformation = Type.Object(
  {
    Reference: Type.Optional(
      Type.Object(
        {
          CreditorName: Type.String({ maxLength: STATEMENT_NAME_MAX }),
          CreditorReference: Type.Optional(StatementReference),
          DebtorName: Type.Optional(Type.String({ maxLength: STATEMENT_NAME_MAX })),
          DebtorReference: Type.Optional(StatementReference),
        },
        closed,
      ),
    ),
  },
  closed,
);
export type RemittanceInformation = Static<typeof RemittanceInformation>;

export const CreditorAgent = Type.Object(
  { SchemeName: Type.Literal('BICFI'), Identification: Type.String({ minLength: 1, maxLength: 35 }) },
  closed,
);

/** The standard's DomesticConsent: the payment a single consent allows, and each payment's Initiation. */
export const DomesticInitiation = Type.Object(
  {
    InstructionIdentification: Type.String({ minLength: 1, maxLength: 36 }),
    EndToEndIdentification: Type.String({ minLength: 1, maxLength: 36 }),
    DebtorAccountRelease: Type.Optional(Type.Boolean()),
    InstructedAmount: ActiveOrHistoricCurrencyAndAmount,
    DebtorAccount: Type.Optional(DebtorAccount),
    CreditorAgent: Type.Optional(CreditorAgent),
    CreditorAccount,
    RemittanceInformation,
  },
  closed,
);
export type DomesticInitiation = Static<typeof DomesticInitiation>;

export const Risk = Type.Object({}, { description: 'Risk indicators; the sandbox bank ignores them' });

export const DomesticConsentRequest = Type.Object(
  {
    Data: Type.Object({ Consent: DomesticInitiation }, closed),
    Risk,
  },
  closed,
);
export type DomesticConsentRequest = Static<typeof DomesticConsentRequest>;

/** The standard's Frequency.Period values. There is no quarter: see docs/banks.md for how quarterly plans map. */
export const EnduringPeriods = ['Daily', 'Weekly', 'Fortnightly', 'Monthly', 'Annual'] as const;
export type EnduringPeriod = (typeof EnduringPeriods)[number];

export const EnduringConsent = Type.Object(
  {
    FromDateTime: Type.String({ format: 'date-time' }),
    ToDateTime: Type.Optional(Type.String({ format: 'date-time' })),
    TotalCount: Type.Optional(Type.Integer({ minimum: 1, maximum: 2 ** 31 - 1 })),
    DebtorAccountRelease: Type.Optional(Type.Boolean()),
    TotalAmount: Type.Optional(ActiveOrHistoricCurrencyAndAmount),
    MaximumAmount: ActiveOrHistoricCurrencyAndAmount,
    Frequency: Type.Object(
      {
        Period: Type.Union(EnduringPeriods.map((p) => Type.Literal(p))),
        TotalCount: Type.Optional(Type.Integer({ minimum: 1, maximum: 2 ** 31 - 1 })),
        TotalAmount: ActiveOrHistoricCurrencyAndAmount,
      },
      closed,
    ),
    DebtorAccount: Type.Optional(DebtorAccount),
    CreditorAccount: Type.Array(CreditorAccount, { minItems: 1, maxItems: 10 }),
  },
  closed,
);
export type EnduringConsent = Static<typeof EnduringConsent>;

export const EnduringConsentRequest = Type.Object(
  {
    Data: Type.Object({ Consent: EnduringConsent }, closed),
    Risk,
  },
  closed,
);
export type EnduringConsentRequest = Static<typeof EnduringConsentRequest>;

export const DomesticPaymentRequest = Type.Object(
  {
    Data: Type.Object(
      { ConsentId: Type.String({ minLength: 1, maxLength: 128 }), Initiation: DomesticInitiation },
      closed,
    ),
    Risk,
  },
  closed,
);
export type DomesticPaymentRequest = Static<typeof DomesticPaymentRequest>;

/** Statuses each kind of consent may report: no Expired in either, no Revoked for a single consent. */
export const DomesticConsentStatuses = ['AwaitingAuthorisation', 'Authorised', 'Consumed', 'Rejected'] as const;
export const EnduringConsentStatuses = ['AwaitingAuthorisation', 'Authorised', 'Revoked', 'Rejected'] as const;
export type ConsentStatus = (typeof DomesticConsentStatuses)[number] | (typeof EnduringConsentStatuses)[number];
export const PaymentStatuses = [
  'Pending',
  'AcceptedSettlementInProcess',
  'AcceptedSettlementCompleted',
  'Rejected',
] as const;
export type PaymentStatus = (typeof PaymentStatuses)[number];

export type ConsentResponse = {
  Data: {
    ConsentId: string;
    Status: ConsentStatus;
    CreationDateTime: string;
    StatusUpdateDateTime: string;
    Consent: unknown;
  };
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
    Initiation: DomesticInitiation;
  };
  Risk: Record<string, unknown>;
  Links: { Self: string };
  Meta: Record<string, unknown>;
};

export type DebtorAccountResponse = {
  Data: { DebtorAccount: DebtorAccount };
  Links: { Self: string };
  Meta: Record<string, unknown>;
};

/** The standard's ErrorCode list (v3.0.2): what a bank may answer, and all the sandbox bank answers. */
export const StandardErrorCodes = [
  'Field.Expected',
  'Field.Invalid',
  'Field.Missing',
  'Field.Unexpected',
  'Header.Invalid',
  'Header.Missing',
  'QueryParam.Invalid',
  'Reauthenticate',
  'Reauthorise',
  'Resource.Consent.CreditorAccount',
  'Resource.Consent.DebtorAccount',
  'Resource.Consent.Exceed.DataPermissions',
  'Resource.Consent.Exceed.Dates',
  'Resource.Consent.Exceed.Frequency',
  'Resource.Consent.Exceed.MaximumAmount',
  'Resource.Consent.Exceed.TotalAmount',
  'Resource.Consent.Exceed.TotalCount',
  'Resource.Consent.Exceed.TransactionDates',
  'Resource.Consent.InvalidStatus',
  'Resource.Consent.Mismatch',
  'Resource.Invalid',
  'UnexpectedError',
  'Unsupported.AccountIdentifier',
  'Unsupported.AccountSecondaryIdentifier',
  'Unsupported.Currency',
  'Unsupported.Scheme',
] as const;
export type StandardErrorCode = (typeof StandardErrorCodes)[number];

export type BankErrorBody = {
  Code: string;
  Id?: string;
  Message: string;
  Errors: Array<{ ErrorCode: string; Message: string; Path?: string }>;
};

/** The standard's correlation id: sent by the connector on every call, echoed by the bank. */
export const INTERACTION_ID_HEADER = 'x-fapi-interaction-id';

/** Header carrying the caller's clock, honoured by the sandbox bank only. */
export const SANDBOX_TIME_HEADER = 'x-sandbox-time';
/**
 * The standard gives a rejected payment no reason. The sandbox bank names the reason its test
 * hooks chose in this extra header of the answer, so tests can see it; real banks send none.
 */
export const SANDBOX_REASON_HEADER = 'x-sandbox-status-reason';

/** Reasons travel as PascalCase status reason codes: insufficient_funds <-> InsufficientFunds. */
export function reasonToCode(reason: string): string {
  return reason
    .split('_')
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('');
}
export function codeToReason(code: string): string {
  return code.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();
}
