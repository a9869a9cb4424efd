import {
  listReceiptsFor,
  receiptPdfFor,
  retrieveTaxSettings,
  saveTaxSettings,
} from '../../receipts/receipts.service.ts';
import { formOf, problemOf, type Kit, type Scope, type Signed } from '../dashboard.kit.ts';
import { text } from '../dashboard.format.ts';

// Tax & receipts: the merchant's legal name, GST number and how documents are issued (owners and
// admins change them; every change is in the audit trail), the newest documents, and the PDF of
// any of them (docs/receipts.md).

const hidden = { schema: { hide: true } };
/** The longest legal name the receipts service keeps. */
const MAX_LEGAL_NAME_LENGTH = 200;

type Values = Record<string, string>;

export function registerTaxPages(scope: Scope, kit: Kit): void {
  const page = async (
    signed: Signed,
    values: Values | null,
    error: { field: string | null; message: string } | null,
    flash: string | null,
  ) => {
    const { tax_settings: settings } = await retrieveTaxSettings(signed.ctx);
    const shown: Values = values ?? {
      legal_name: settings?.legal_name ?? signed.session.merchant.name,
      gst_number: settings?.gst_number ?? '',
      prices_include_gst: settings === null || settings.prices_include_gst ? 'yes' : 'no',
      issue_tax_invoices: settings?.issue_tax_invoices ? 'on' : '',
      email_receipts: settings?.email_receipts ? 'on' : '',
    };
    return {
      title: 'Tax & receipts',
      ...kit.layoutOf(signed, 'tax'),
      settings,
      values: shown,
      error,
      flash,
      receipts: (await listReceiptsFor(signed.ctx, { limit: 25 })).receipts,
    };
  };

  scope.get(
    '/dashboard/:mode/tax',
    hidden,
    kit.guard(
      async (request, reply, signed) =>
        kit.render(
          reply,
          200,
          'tax',
          await page(signed, null, null, text(request.query.done) === 'saved' ? 'The tax settings are saved.' : null),
        ),
      { permission: 'read' },
    ),
  );

  scope.post(
    '/dashboard/:mode/tax',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const form = formOf(request);
        const values: Values = {
          // Not cut to the limit: a name over it is refused and shown again, not saved shortened.
          legal_name: text(form.legal_name, 1000),
          gst_number: text(form.gst_number, 20),
          prices_include_gst: text(form.prices_include_gst, 3) === 'no' ? 'no' : 'yes',
          issue_tax_invoices: text(form.issue_tax_invoices, 3) === 'on' ? 'on' : '',
          email_receipts: text(form.email_receipts, 3) === 'on' ? 'on' : '',
        };
        try {
          await saveTaxSettings(signed.ctx, {
            legal_name: values.legal_name!,
            gst_number: values.gst_number || null,
            prices_include_gst: values.prices_include_gst === 'yes',
            issue_tax_invoices: values.issue_tax_invoices === 'on',
            email_receipts: values.email_receipts === 'on',
          });
        } catch (error) {
          const problem = problemOf(error);
          if (!problem) throw error;
          const message =
            problem.field === 'gst_number'
              ? values.gst_number
                ? 'That is not a valid GST number: enter the 8 or 9 digits Inland Revenue gave you, such as 49-091-850.'
                : 'Tax invoices show your GST number: enter it, or untick “Issue tax invoices”.'
              : problem.field === 'legal_name'
                ? legalNameProblem(values.legal_name!)
                : problem.message;
          return kit.render(reply, 400, 'tax', await page(signed, values, { field: problem.field, message }, null));
        }
        return reply.redirect(`${signed.base}/tax?done=saved`, 303);
      },
      { permission: 'tax_settings.manage', post: true },
    ),
  );
  registerReceiptDownload(scope, kit);
}

/** What is wrong with the legal name the service refused, in the form's words. */
function legalNameProblem(legalName: string): string {
  if (legalName.length > MAX_LEGAL_NAME_LENGTH)
    return `“Legal name” can be at most ${MAX_LEGAL_NAME_LENGTH} characters: shorten it.`;
  return 'Enter your legal name, as your documents should show it.';
}

/** The PDF of any of the merchant's documents in the mode; another merchant's is a 404. */
function registerReceiptDownload(scope: Scope, kit: Kit): void {
  scope.get(
    '/dashboard/:mode/receipts/:id/pdf',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const file = await receiptPdfFor(signed.ctx, request.params.id);
        return reply
          .header('content-type', 'application/pdf')
          .header('content-disposition', `attachment; filename="${file.filename}"`)
          .header('cache-control', 'no-store')
          .send(file.pdf);
      },
      { permission: 'read' },
    ),
  );
}
