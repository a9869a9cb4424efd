import { Type, type Static, type TSchema } from 'typebox';
import {
  CreditorAccount as WireCreditorAccount,
  CreditorAgent as WireCreditorAgent,
  DebtorAccount as WireDebtorAccount,
  DomesticConsentStatuses,
  DomesticInitiation,
  EnduringConsent as WireEnduringConsent,
  EnduringConsentStatuses,
  EnduringPeriods,
  INTERACTION_ID_HEADER,
  PaymentStatuses,
  RemittanceInformation,
  StandardErrorCodes,
} from '../../shared/open-banking.wire.ts';

// The Payments NZ Payment Initiation API v3.0.2, as far as Tono uses it: the eight operations, their
// headers, security, bodies, statuses and error codes, written from the standard's facts so the
// repository needs nothing beside it. It is shaped like an OpenAPI 3 document ({ paths, components })
// so that the contract test checks recorded exchanges against it with the same checker as the
// official document, and compares the two operation by operation whenever the official one is at hand.
//
// The wire shapes are what the connector sends and the sandbox bank accepts, which is narrower than
// the standard in places (NZD only, two decimals, NZ account numbers). This description starts from
// them and widens back only the properties where they deliberately differ: a bank may answer with
// anything the standard allows.

const closed = { additionalProperties: false } as const;

/** The standard writes single values and code lists as string enums, not constants. */
function stringEnum<const Values extends readonly string[]>(
  values: Values,
  options: { default?: Values[number] } = {},
) {
  return Type.Unsafe<Values[number]>({ type: 'string', enum: [...values], ...options });
}

/** An integer the standard bounds to 32 bits by format, not by minimum and maximum. */
const Int32 = () => Type.Integer({ format: 'int32' });

/** Any currency and up to five decimals: only the wire insists on NZD with cents. */
export const Amount = Type.Object(
  {
    Amount: Type.String({ pattern: '^\\d{1,13}\\.\\d{1,5}$' }),
    Currency: Type.String({ pattern: '^[A-Z]{3,3}$' }),
  },
  closed,
);

const BecsScheme = stringEnum(['BECSElectronicCredit'], { default: 'BECSElectronicCredit' });
const ConsentId = Type.String({ minLength: 1, maxLength: 128 });
const DebtorAccountRelease = Type.Boolean({ default: false });

export const DebtorAccount = Type.Object({ ...WireDebtorAccount.properties, SchemeName: BecsScheme }, closed);

/** Any account identification up to 34 characters: the NZ account-number pattern is the wire's. */
export const CreditorAccount = Type.Object(
  {
    ...WireCreditorAccount.properties,
    SchemeName: BecsScheme,
    Identification: Type.String({ minLength: 1, maxLength: 34 }),
  },
  closed,
);

export const CreditorAgent = Type.Object(
  { ...WireCreditorAgent.properties, SchemeName: stringEnum(['BICFI']) },
  closed,
);

export const BECSRemittance = RemittanceInformation.properties.Reference;

/** The consent of a single payment, and the Initiation of every payment. */
export const DomesticConsent = Type.Object(
  {
    ...DomesticInitiation.properties,
    DebtorAccountRelease: Type.Optional(DebtorAccountRelease),
    InstructedAmount: Amount,
    DebtorAccount: Type.Optional(DebtorAccount),
    CreditorAgent: Type.Optional(CreditorAgent),
    CreditorAccount,
  },
  closed,
);
export type DomesticConsent = Static<typeof DomesticConsent>;

export const EnduringConsent = Type.Object(
  {
    ...WireEnduringConsent.properties,
    TotalCount: Type.Optional(Int32()),
    DebtorAccountRelease: Type.Optional(DebtorAccountRelease),
    TotalAmount: Type.Optional(Amount),
    MaximumAmount: Amount,
    Frequency: Type.Object(
      {
        Period: stringEnum(EnduringPeriods),
        TotalCount: Type.Optional(Int32()),
        TotalAmount: Amount,
      },
      closed,
    ),
    DebtorAccount: Type.Optional(DebtorAccount),
    CreditorAccount: Type.Array(CreditorAccount, { minItems: 1 }),
  },
  closed,
);
export type EnduringConsent = Static<typeof EnduringConsent>;

const Text = (min: number, max: number) => Type.String({ minLength: min, maxLength: max });
const Coordinate = Type.String({ maxLength: 14, pattern: '^-?\\d{1,3}\\.\\d{1,8}$' });

/** Every indicator is optional and the sandbox bank ignores them, but a bank refuses any other field. */
export const Risk = Type.Object(
  {
    GeoLocation: Type.Optional(Type.Object({ Latitude: Coordinate, Longitude: Coordinate }, closed)),
    PaymentContextCode: Type.Optional(
      stringEnum(['BillPayment', 'EcommerceGoods', 'EcommerceServices', 'Other', 'PersonToPerson']),
    ),
    MerchantCategoryCode: Type.Optional(Text(3, 4)),
    MerchantCustomerIdentification: Type.Optional(Text(1, 70)),
    DeliveryAddress: Type.Optional(
      Type.Object(
        {
          AddressType: Type.Optional(stringEnum(['DeliveryTo'])),
          AddressLine: Type.Optional(Type.Array(Text(1, 70), { minItems: 0, maxItems: 5 })),
          StreetName: Type.Optional(Text(1, 70)),
          BuildingNumber: Type.Optional(Text(1, 16)),
          PostCode: Type.Optional(Text(1, 16)),
          TownName: Type.Optional(Text(1, 35)),
          CountrySubDivision: Type.Optional(Text(1, 35)),
          Country: Type.String({ pattern: '^[A-Z]{2,2}$' }),
        },
        closed,
      ),
    ),
    EndUserAppName: Type.Optional(Text(1, 70)),
    EndUserAppVersion: Type.Optional(Text(1, 14)),
    EndUserCompanyName: Type.Optional(Text(1, 70)),
    EndUserCompanyNZBN: Type.Optional(Text(1, 70)),
    MerchantName: Type.Optional(Text(1, 70)),
    MerchantNZBN: Type.Optional(Text(1, 70)),
  },
  closed,
);

const Uri = () => Type.String({ format: 'uri' });
/** Open: the standard leaves Links unclosed, unlike every other object it defines. */
export const Links = Type.Object({
  Self: Uri(),
  First: Type.Optional(Uri()),
  Prev: Type.Optional(Uri()),
  Next: Type.Optional(Uri()),
  Last: Type.Optional(Uri()),
});
export const Meta = Type.Object({ TotalPages: Type.Optional(Int32()) }, closed);

const Timestamp = () => Type.String({ format: 'date-time' });

export const DomesticPaymentConsent = Type.Object({ Consent: DomesticConsent }, closed);
export const DomesticPaymentConsentResponse = Type.Object(
  {
    ConsentId,
    Status: stringEnum(DomesticConsentStatuses),
    CreationDateTime: Timestamp(),
    StatusUpdateDateTime: Timestamp(),
    Consent: DomesticConsent,
  },
  closed,
);

export const EnduringPaymentConsent = Type.Object({ Consent: EnduringConsent }, closed);
export const EnduringPaymentConsentResponse = Type.Object(
  {
    ConsentId,
    Status: stringEnum(EnduringConsentStatuses),
    CreationDateTime: Timestamp(),
    StatusUpdateDateTime: Timestamp(),
    Consent: EnduringConsent,
  },
  closed,
);

export const DomesticPayment = Type.Object({ ConsentId, Initiation: DomesticConsent }, closed);
export const DomesticPaymentResponse = Type.Object(
  {
    DomesticPaymentId: Type.String({ minLength: 1, maxLength: 128 }),
    ConsentId,
    Status: stringEnum(PaymentStatuses),
    CreationDateTime: Timestamp(),
    StatusUpdateDateTime: Timestamp(),
    Initiation: DomesticConsent,
  },
  closed,
);

export const DomesticPaymentDebtorAccountResponse = Type.Object({ DebtorAccount }, closed);

/** One problem of an error answer (the standard's Error). */
export const ErrorDetail = Type.Object(
  {
    ErrorCode: stringEnum(StandardErrorCodes),
    Message: Text(1, 500),
    Path: Type.Optional(Text(1, 500)),
    Url: Type.Optional(Type.String()),
  },
  { ...closed, minProperties: 1 },
);

export const ErrorResponse = Type.Object(
  {
    Code: Text(1, 128),
    Id: Type.Optional(Text(1, 128)),
    Message: Text(1, 500),
    Errors: Type.Array(ErrorDetail, { minItems: 1 }),
  },
  closed,
);
export type ErrorResponse = Static<typeof ErrorResponse>;

// Requests and answers carry their resource in Data beside Risk, Links and Meta; the standard writes
// these envelopes inline in each operation rather than as named schemas.
const requestEnvelope = <T extends TSchema>(data: T) => Type.Object({ Data: data, Risk }, closed);
const responseEnvelope = <T extends TSchema>(data: T) => Type.Object({ Data: data, Risk, Links, Meta }, closed);

const schemas = {
  Error: ErrorDetail,
  ErrorResponse,
  CreditorAgent,
  CreditorAccount,
  DebtorAccount,
  Meta,
  Links,
  Risk,
  BECSRemittance,
  DomesticConsent,
  DomesticPaymentConsent,
  DomesticPaymentConsentResponse,
  DomesticPayment,
  DomesticPaymentResponse,
  DomesticPaymentDebtorAccountResponse,
  EnduringConsent,
  EnduringPaymentConsent,
  EnduringPaymentConsentResponse,
};

const header = (name: string, required: boolean, schema: TSchema) => ({ name, in: 'header', required, schema });
const pathParameter = (name: string) => ({ name, in: 'path', required: true, schema: Type.String() });
const ipAddress = () =>
  Type.Unsafe<string>({ oneOf: [Type.String({ format: 'ipv4' }), Type.String({ format: 'ipv6' })] });

const parameters = {
  'x-idempotency-key-Param': header(
    'x-idempotency-key',
    true,
    Type.String({ maxLength: 40, pattern: '^(?!\\s)(.*)(\\S)$' }),
  ),
  'x-fapi-customer-ip-address-Param': header('x-fapi-customer-ip-address', false, ipAddress()),
  'x-fapi-interaction-id-Param': header(INTERACTION_ID_HEADER, false, Type.String()),
  'x-fapi-auth-date-Param': header(
    'x-fapi-auth-date',
    false,
    Type.String({
      pattern:
        '^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \\d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \\d{4} \\d{2}:\\d{2}:\\d{2} (GMT|UTC)$',
    }),
  ),
  'x-merchant-ip-address-Param': header('x-merchant-ip-address', false, ipAddress()),
  'x-customer-user-agent-Param': header('x-customer-user-agent', false, Type.String()),
  ConsentIdParam: pathParameter('ConsentId'),
  DomesticPaymentIdParam: pathParameter('DomesticPaymentId'),
};

/** The optional FAPI headers every operation takes. */
const fapiHeaders = [
  parameters['x-fapi-auth-date-Param'],
  parameters['x-fapi-customer-ip-address-Param'],
  parameters['x-fapi-interaction-id-Param'],
  parameters['x-merchant-ip-address-Param'],
  parameters['x-customer-user-agent-Param'],
];

const interactionIdHeader = { [INTERACTION_ID_HEADER]: { schema: Type.String() } };
const json = <T extends TSchema>(schema: T) => ({ 'application/json': { schema } });
const errorResponse = (extraHeaders = {}) => ({
  headers: { ...extraHeaders, ...interactionIdHeader },
  content: json(ErrorResponse),
});

const responses = {
  '400ErrorResponse': errorResponse(),
  '401ErrorResponse': errorResponse(),
  '403ErrorResponse': errorResponse(),
  '405ErrorResponse': errorResponse(),
  '406ErrorResponse': errorResponse(),
  '415ErrorResponse': errorResponse(),
  '429ErrorResponse': errorResponse({ 'Retry-After': { schema: Type.Integer() } }),
  '500ErrorResponse': errorResponse(),
  '501ErrorResponse': errorResponse(),
  '503ErrorResponse': errorResponse(),
};

/** Reads and deletes have no body, so no 415 (unsupported media type) either. */
const readErrors = {
  '400': responses['400ErrorResponse'],
  '401': responses['401ErrorResponse'],
  '403': responses['403ErrorResponse'],
  '405': responses['405ErrorResponse'],
  '406': responses['406ErrorResponse'],
  '429': responses['429ErrorResponse'],
  '500': responses['500ErrorResponse'],
  '501': responses['501ErrorResponse'],
  '503': responses['503ErrorResponse'],
};
const writeErrors = { ...readErrors, '415': responses['415ErrorResponse'] };

// A client-credentials token for the third party's own calls; the token of the payer's authorisation
// (authorization code) for the payment made under a consent. Each bank publishes its own URLs; these
// are the paths under the bank's base URL where the sandbox bank serves them.
const securitySchemes = {
  ThirdPartyOAuth2Security: {
    type: 'oauth2',
    flows: { clientCredentials: { tokenUrl: '/token', scopes: { payments: 'Initiate payments' } } },
  },
  CustomerOAuth2Security: {
    type: 'oauth2',
    flows: {
      authorizationCode: {
        authorizationUrl: '/authorize',
        tokenUrl: '/token',
        scopes: { payments: 'Initiate payments' },
      },
    },
  },
};
const thirdParty = [{ ThirdPartyOAuth2Security: ['payments'] }];
const customer = [{ CustomerOAuth2Security: ['payments'] }];

const created = <T extends TSchema>(body: T) => ({ '201': { headers: interactionIdHeader, content: json(body) } });
const ok = <T extends TSchema>(body: T) => ({ '200': { headers: interactionIdHeader, content: json(body) } });
const requestBody = <T extends TSchema>(schema: T) => ({ required: true, content: json(schema) });

const paths = {
  '/enduring-payment-consents': {
    post: {
      operationId: 'CreateEnduringPaymentConsent',
      parameters: [parameters['x-idempotency-key-Param'], ...fapiHeaders],
      requestBody: requestBody(requestEnvelope(EnduringPaymentConsent)),
      responses: { ...created(responseEnvelope(EnduringPaymentConsentResponse)), ...writeErrors },
      security: thirdParty,
    },
  },
  '/enduring-payment-consents/{ConsentId}': {
    get: {
      operationId: 'GetEnduringPaymentConsent',
      parameters: [parameters.ConsentIdParam, ...fapiHeaders],
      responses: { ...ok(responseEnvelope(EnduringPaymentConsentResponse)), ...readErrors },
      security: thirdParty,
    },
    delete: {
      operationId: 'DeleteEnduringPaymentConsent',
      parameters: [parameters.ConsentIdParam, ...fapiHeaders],
      responses: { '204': { headers: interactionIdHeader }, ...readErrors },
      security: thirdParty,
    },
  },
  '/domestic-payment-consents': {
    post: {
      operationId: 'CreateDomesticPaymentConsent',
      parameters: [parameters['x-idempotency-key-Param'], ...fapiHeaders],
      requestBody: requestBody(requestEnvelope(DomesticPaymentConsent)),
      responses: { ...created(responseEnvelope(DomesticPaymentConsentResponse)), ...writeErrors },
      security: thirdParty,
    },
  },
  '/domestic-payment-consents/{ConsentId}': {
    get: {
      operationId: 'GetDomesticPaymentConsent',
      parameters: [parameters.ConsentIdParam, ...fapiHeaders],
      responses: { ...ok(responseEnvelope(DomesticPaymentConsentResponse)), ...readErrors },
      security: thirdParty,
    },
  },
  '/domestic-payments': {
    post: {
      operationId: 'CreateDomesticPayment',
      parameters: [parameters['x-idempotency-key-Param'], ...fapiHeaders],
      requestBody: requestBody(requestEnvelope(DomesticPayment)),
      responses: { ...created(responseEnvelope(DomesticPaymentResponse)), ...writeErrors },
      security: customer,
    },
  },
  '/domestic-payments/{DomesticPaymentId}': {
    get: {
      operationId: 'GetDomesticPayment',
      parameters: [parameters.DomesticPaymentIdParam, ...fapiHeaders],
      responses: { ...ok(responseEnvelope(DomesticPaymentResponse)), ...readErrors },
      security: thirdParty,
    },
  },
  '/domestic-payments/{DomesticPaymentId}/debtor-account': {
    get: {
      operationId: 'GetDomesticPaymentDebtorAccount',
      parameters: [parameters.DomesticPaymentIdParam, ...fapiHeaders],
      // The payer's account and nothing of the payment: no Risk.
      responses: {
        ...ok(Type.Object({ Data: DomesticPaymentDebtorAccountResponse, Links, Meta }, closed)),
        ...readErrors,
      },
      security: thirdParty,
    },
  },
};

export const paymentInitiationContract = {
  openapi: '3.0.3',
  info: { title: 'Payment Initiation: the operations Tono uses', version: '3.0.2' },
  paths,
  components: { parameters, responses, securitySchemes, schemas },
};
