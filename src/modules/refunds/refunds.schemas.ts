import { Type, type Static } from 'typebox';
import { AmountInput, AmountObject, Nullable, Timestamp } from '../../http/schemas.ts';
import { idPattern } from '../../shared/ids.ts';
import { listQueryFields } from '../../shared/pagination.ts';
import { ActionReason, REASON_MAX_LENGTH, RefundStatus } from './refunds.rules.ts';

export const CreateRefundBody = Type.Object(
  {
    payment_id: Type.String({ pattern: idPattern('payment'), description: 'The successful payment to refund' }),
    amount: Type.Optional(AmountInput('How much to refund; without it, everything that remains refundable')),
    reason: Type.Optional(
      Type.String({ maxLength: REASON_MAX_LENGTH, description: 'Why, for your records and the payer’s email' }),
    ),
  },
  { additionalProperties: false },
);
export type CreateRefundBody = Static<typeof CreateRefundBody>;

export const RefundObject = Type.Object(
  {
    id: Type.String({ examples: ['refund_01JD2Q8Z7M3V4K5N6P7R8S9T0V'] }),
    payment_id: Type.String(),
    request_id: Type.String(),
    amount: AmountObject,
    status: Type.Enum(RefundStatus),
    reason: Nullable(Type.String()),
    failure_reason: Nullable(Type.String({ description: 'Why the refund failed' })),
    action_reason: Nullable(
      Type.Enum(ActionReason, {
        description: 'Why the refund requires you to pay it by hand (status requires_action)',
      }),
    ),
    pcr: Type.Object(
      { particulars: Type.String(), code: Type.String(), reference: Type.String() },
      { description: 'What the payer’s statement shows: "Refund", the payment’s particulars, its reference' },
    ),
    is_test_mode: Type.Boolean(),
    created_at: Timestamp,
    updated_at: Timestamp,
    completed_at: Nullable(Timestamp),
  },
  { title: 'Refund' },
);
export const RefundEnvelope = Type.Object({ refund: RefundObject });
export const RefundList = Type.Object({ refunds: Type.Array(RefundObject), has_more: Type.Boolean() });

export const ListRefundsQuery = Type.Object(
  {
    ...listQueryFields('refund'),
    payment_id: Type.Optional(Type.String({ maxLength: 64, description: 'Only the refunds of this payment' })),
    status: Type.Optional(Type.Enum(RefundStatus)),
  },
  { additionalProperties: false },
);
export type ListRefundsQuery = Static<typeof ListRefundsQuery>;

export const RefundAuthorityObject = Type.Object(
  {
    id: Type.String({ examples: ['refundauth_01JD2Q8Z7M3V4K5N6P7R8S9T0V'] }),
    status: Type.Literal('active'),
    bank: Type.String({ description: 'Your bank, where the enduring consent is' }),
    account_number: Nullable(
      Type.String({
        description: 'Your account the refunds are paid from (in test mode, null until the first refund opens it)',
      }),
    ),
    period: Type.Enum(['daily', 'weekly', 'monthly']),
    max_per_refund: AmountObject,
    max_per_period: AmountObject,
    used_this_period: AmountObject,
    period_ends_at: Timestamp,
    approved_at: Nullable(Timestamp),
    is_test_mode: Type.Boolean(),
  },
  { title: 'RefundAuthority' },
);
export const RefundAuthorityEnvelope = Type.Object({ refund_authority: Nullable(RefundAuthorityObject) });
