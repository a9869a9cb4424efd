import { Type, type Static } from 'typebox';
import { AmountObject, Nullable, Timestamp } from '../../http/schemas.ts';
import { listQueryFields } from '../../shared/pagination.ts';
import { CustInfoObject } from '../customers/customers.schemas.ts';
import { PaymentStatus } from './payments.rules.ts';

export const PaymentObject = Type.Object(
  {
    id: Type.String({ examples: ['payment_01JD2Q8Z7M3V4K5N6P7R8S9T0V'] }),
    request_id: Type.String(),
    amount: AmountObject,
    requested_amount: AmountObject,
    amount_refunded: AmountObject,
    status: Type.Enum(PaymentStatus),
    merchant_identifier: Nullable(Type.String()),
    cust_info: Type.Optional(CustInfoObject),
    provider: Nullable(Type.String({ description: "The paying bank's identifier" })),
    pcr: Type.Object({ particulars: Type.String(), code: Type.String(), reference: Type.String() }),
    is_test_mode: Type.Boolean(),
    failure_reason: Nullable(Type.String({ description: 'Why a payment failed or was cancelled' })),
    recurring_consent_id: Type.Optional(Type.String()),
    subscription_id: Type.Optional(Type.String()),
    created_at: Timestamp,
    updated_at: Timestamp,
    completed_at: Nullable(Timestamp),
  },
  { title: 'Payment' },
);
export const PaymentEnvelope = Type.Object({ payment: PaymentObject });
export const PaymentList = Type.Object({ payments: Type.Array(PaymentObject), has_more: Type.Boolean() });

export const ListPaymentsQuery = Type.Object(
  {
    ...listQueryFields('payment'),
    status: Type.Optional(Type.Enum(PaymentStatus)),
    request_id: Type.Optional(Type.String({ maxLength: 64 })),
    merchant_identifier: Type.Optional(Type.String({ maxLength: 255 })),
  },
  { additionalProperties: false },
);
export type ListPaymentsQuery = Static<typeof ListPaymentsQuery>;

export const ListRequestPaymentsQuery = Type.Object(
  { ...listQueryFields('payment'), status: Type.Optional(Type.Enum(PaymentStatus)) },
  { additionalProperties: false },
);
export type ListRequestPaymentsQuery = Static<typeof ListRequestPaymentsQuery>;
