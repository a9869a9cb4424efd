import { Type } from 'typebox';
import { errorResponses, IdParams } from '../../http/schemas.ts';
import { apiKeyAuth, keyScope } from '../merchants/merchants.auth.ts';
import type { Deps } from '../context.ts';
import type { App } from '../../http/app-type.ts';
import {
  ListReceiptsQuery,
  ReceiptEnvelope,
  ReceiptList,
  TaxSettingsBody,
  TaxSettingsEnvelope,
} from './receipts.schemas.ts';
import {
  listReceiptsFor,
  receiptPdfFor,
  retrieveReceipt,
  retrieveTaxSettings,
  saveTaxSettingsWithKey,
} from './receipts.service.ts';

export async function registerReceiptRoutes(app: App, deps: Deps): Promise<void> {
  const auth = apiKeyAuth(deps);
  const tags = ['Receipts'];
  const scope = { keyScope: keyScope('receipts') };

  app.get(
    '/v1/tax-settings',
    {
      onRequest: auth,
      config: scope,
      schema: {
        tags,
        summary: 'Your tax settings: legal name, GST number, and how documents are issued',
        description: 'The same in live and test mode; null until set (docs/receipts.md).',
        response: { 200: TaxSettingsEnvelope, ...errorResponses },
      },
    },
    async (request) => retrieveTaxSettings(request.ctx),
  );

  app.post(
    '/v1/tax-settings',
    {
      onRequest: auth,
      config: scope,
      schema: {
        tags,
        summary: 'Set your tax settings',
        description:
          'Live keys only: the settings are the same in both modes, so what a test key does never changes live receipts (403 `forbidden.live_key_required`; the dashboard changes them in either mode). Replaces them all (sending the same body again changes nothing). The GST number is checked with its check digit; tax invoices need one. Documents already issued keep what they show.',
        body: TaxSettingsBody,
        response: { 200: TaxSettingsEnvelope, ...errorResponses },
      },
    },
    async (request) => saveTaxSettingsWithKey(request.ctx, request.body),
  );

  app.get(
    '/v1/receipts',
    {
      onRequest: auth,
      config: scope,
      schema: {
        tags,
        summary: 'List receipts and credit notes, newest first',
        description: 'Filter by payment_id, refund_id and kind; paginate with limit and starting_after.',
        querystring: ListReceiptsQuery,
        response: { 200: ReceiptList, ...errorResponses },
      },
    },
    async (request) => listReceiptsFor(request.ctx, request.query),
  );

  app.get(
    '/v1/receipts/:id',
    {
      onRequest: auth,
      config: scope,
      schema: {
        tags,
        summary: 'Get a receipt or credit note',
        description: 'What it shows, exactly as it was issued.',
        params: IdParams('Receipt id (receipt_…)'),
        response: { 200: ReceiptEnvelope, ...errorResponses },
      },
    },
    async (request) => retrieveReceipt(request.ctx, request.params.id),
  );

  app.get(
    '/v1/receipts/:id/pdf',
    {
      onRequest: auth,
      config: scope,
      schema: {
        tags,
        summary: 'Download a receipt or credit note as a PDF',
        description: 'The same figures as the object and the payer’s email.',
        params: IdParams('Receipt id (receipt_…)'),
        response: {
          200: {
            description: 'The PDF',
            content: { 'application/pdf': { schema: Type.String({ format: 'binary' }) } },
          },
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      const file = await receiptPdfFor(request.ctx, request.params.id);
      return reply
        .header('content-type', 'application/pdf')
        .header('content-disposition', `attachment; filename="${file.filename}"`)
        .header('cache-control', 'no-store')
        .send(file.pdf as never);
    },
  );
}
