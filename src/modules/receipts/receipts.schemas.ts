import { Type, type Static } from 'typebox';
import { AmountObject, Nullable, Timestamp } from '../../http/schemas.ts';
import { listQueryFields } from '../../shared/pagination.ts';
import { BANDS } from './receipts.rules.ts';

export const TaxSettingsObject = Type.Object(
  {
    legal_name: Type.String({ description: 'The supplier’s name every document shows' }),
    gst_number: Nullable(Type.String({ description: 'Your GST number, as 49-091-850 or 136-410-132' })),
    prices_include_gst: Type.Boolean({
      description:
        'Whether your prices include GST: documents show the total and the GST in it, or the price before GST, the GST and the total',
    }),
    issue_tax_invoices: Type.Boolean({ description: 'Whether documents are tax invoices (needs gst_number)' }),
    email_receipts: Type.Boolean({
      description: 'Whether the payer is emailed every receipt and credit note (a subscription’s charges always are)',
    }),
  },
  { title: 'TaxSettings' },
);
export const TaxSettingsEnvelope = Type.Object({ tax_settings: Nullable(TaxSettingsObject) });

export const TaxSettingsBody = Type.Object(
  {
    legal_name: Type.String({ minLength: 1, maxLength: 200 }),
    gst_number: Type.Optional(
      Nullable(
        Type.String({
          maxLength: 20,
          description: '8 or 9 digits, with or without hyphens or spaces; checked with its check digit',
        }),
      ),
    ),
    prices_include_gst: Type.Boolean(),
    issue_tax_invoices: Type.Boolean(),
    email_receipts: Type.Boolean(),
  },
  { additionalProperties: false },
);
export type TaxSettingsBody = Static<typeof TaxSettingsBody>;

const DocumentLine = Type.Object({ label: Type.String(), value: Type.String() });

export const ReceiptObject = Type.Object(
  {
    id: Type.String({ examples: ['receipt_01JD2Q8Z7M3V4K5N6P7R8S9T0V'] }),
    kind: Type.Enum(['receipt', 'credit_note']),
    title: Type.String({ description: '"Tax invoice", "Receipt" or "Credit note"' }),
    number: Type.String({ description: 'R-000001 for receipts, CN-000001 for credit notes: per mode, with no gaps' }),
    payment_id: Type.String(),
    refund_id: Nullable(Type.String({ description: 'A credit note’s refund' })),
    receipt_id: Nullable(Type.String({ description: 'The receipt a credit note credits' })),
    total: AmountObject,
    gst: Nullable(AmountObject),
    band: Type.Enum([...BANDS], { description: 'The value band of taxable supply information (docs/receipts.md)' }),
    supplier: Type.String(),
    gst_number: Nullable(Type.String()),
    date: Type.String({ description: 'The date the document shows, in New Zealand' }),
    lines: Type.Array(DocumentLine, { description: 'What the document shows, in order, as it was issued' }),
    notes: Type.Array(Type.String()),
    emailed_to: Nullable(Type.String({ description: 'The payer’s email it was sent to, if it was' })),
    is_test_mode: Type.Boolean(),
    issued_at: Timestamp,
  },
  { title: 'Receipt' },
);
export const ReceiptEnvelope = Type.Object({ receipt: ReceiptObject });
export const ReceiptList = Type.Object({ receipts: Type.Array(ReceiptObject), has_more: Type.Boolean() });

export const ListReceiptsQuery = Type.Object(
  {
    ...listQueryFields('receipt'),
    payment_id: Type.Optional(Type.String({ maxLength: 64, description: 'Only the documents of this payment' })),
    refund_id: Type.Optional(Type.String({ maxLength: 64, description: 'Only the credit note of this refund' })),
    kind: Type.Optional(Type.Enum(['receipt', 'credit_note'])),
  },
  { additionalProperties: false },
);
export type ListReceiptsQuery = Static<typeof ListReceiptsQuery>;
