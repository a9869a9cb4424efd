import { THIS_PERIOD } from '../../consents/limits.ts';
import { displayAmount, parseAmount } from '../../../shared/money.ts';
import { retrieveConsent } from '../../consents/consents.service.ts';
import { executePaymentOnConsent, refusalOfCharge } from '../../consents/execute.service.ts';
import { ReferenceInput } from '../../../http/schemas.ts';
import { text, withShownMoney } from '../dashboard.format.ts';
import {
  amountText,
  apiBodyProblem,
  confirmationKeyOf,
  formKeyOf,
  isSentBeforeWithOtherValues,
  newConfirmationKey,
  SENT_BEFORE,
} from '../dashboard.forms.ts';
import { formOf, problemOf, type Kit, type Scope, type Signed } from '../dashboard.kit.ts';

// Charging a recurring consent from the dashboard, for a merchant who writes no code: the amount
// and reference, then a confirmation that says what the limits leave, then one payment per form.
// The form carries an idempotency key made when its page was shown (the GET), through the review to
// the confirmation, so a double submit, a reload, or Back (which posts the review again) and
// resubmit answers with the first payment instead of a second one.

const hidden = { schema: { hide: true } };
const referenceSchema = ReferenceInput('Statement reference');

type ChargeValues = { amount: string; reference: string };

type FormPage = ReturnType<typeof chargeFormPage>;

/** The charge form of a consent: what its limits leave, the amount and reference, and the form's key. */
function chargeFormPage(kit: Kit) {
  return async (signed: Signed, id: string, values: ChargeValues, error: string | null, key: string) => {
    const { recurring_consent: consent } = await retrieveConsent(signed.ctx, id);
    return {
      title: 'Charge this consent',
      ...kit.layoutOf(signed, 'recurring-consents'),
      item: consent,
      thisPeriod: THIS_PERIOD[consent.limits.period],
      values,
      error,
      key,
    };
  };
}

export function registerConsentCharge(scope: Scope, kit: Kit): void {
  const formPage = chargeFormPage(kit);
  scope.get(
    '/dashboard/:mode/recurring-consents/:id/charge',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        // Go back from the confirmation keeps what was typed, and the form's key.
        const typed = text(request.query.amount) ? valuesOf(request.query) : emptyCharge;
        const key = formKeyOf(request.query) ?? newConfirmationKey();
        return kit.render(reply, 200, 'consent-charge', await formPage(signed, request.params.id, typed, null, key));
      },
      { permission: 'recurring.manage' },
    ),
  );

  scope.post(
    '/dashboard/:mode/recurring-consents/:id/charge',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const id = request.params.id;
        const form = formOf(request);
        const values = valuesOf(form);
        // The key the form page made (a page from before keys: one made now).
        const key = formKeyOf(form) ?? newConfirmationKey();
        const again = async (status: number, message: string) =>
          kit.render(reply, status, 'consent-charge', await formPage(signed, id, values, message, key));
        const typed = problemOfValues(values);
        if (typed) return again(400, typed);
        const cents = parseAmount(amountText(values.amount))!;
        const refusal = await refusalOfCharge(signed.ctx, id, cents);
        if (refusal) return again(refusal.status, chargeRefusal(refusal.message));
        const { recurring_consent: consent } = await retrieveConsent(signed.ctx, id);
        return kit.render(reply, 200, 'confirm', {
          title: 'Confirm the charge',
          ...kit.layoutOf(signed, 'recurring-consents'),
          heading: `Charge ${displayAmount(cents)} to ${consent.email} for “${consent.description}”?`,
          consequence: `${leftAfter(consent, cents)} The payment is made at once at the payer’s bank, and payment.status_updated is sent.`,
          action: `${signed.base}/recurring-consents/${id}/charge/confirm`,
          fields: { amount: values.amount, reference: values.reference, idempotency_key: key },
          confirm: `Yes, charge ${displayAmount(cents)}`,
          confirmClass: 'primary',
          back: `${signed.base}/recurring-consents/${id}/charge${kit.helpers.queryOf({ ...values, idempotency_key: key })}`,
        });
      },
      { permission: 'recurring.manage', post: true },
    ),
  );

  registerChargeConfirm(scope, kit, formPage);
}

/** "Yes, charge": one payment per form (its idempotency key), then the payment's page. */
function registerChargeConfirm(scope: Scope, kit: Kit, formPage: FormPage): void {
  scope.post(
    '/dashboard/:mode/recurring-consents/:id/charge/confirm',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const id = request.params.id;
        const form = formOf(request);
        const values = valuesOf(form);
        const key = text(form.idempotency_key, 100);
        const typed = problemOfValues(values) ?? (confirmationKeyOf(key) ? null : 'The form is incomplete.');
        const formKey = confirmationKeyOf(key) ?? newConfirmationKey();
        if (typed) return kit.render(reply, 400, 'consent-charge', await formPage(signed, id, values, typed, formKey));
        try {
          const charged = await executePaymentOnConsent(signed.ctx, id, {
            amount: amountText(values.amount),
            idempotency_key: key,
            ...(values.reference ? { reference: values.reference } : {}),
          });
          return reply.redirect(`${signed.base}/payments/${charged.payment.id}?done=charged`, 303);
        } catch (error) {
          const problem = problemOf(error);
          if (!problem) throw error;
          // The form's key sent with other values (an earlier form, changed): its payment was made;
          // the form is shown again with a new key for another.
          const sentBefore = isSentBeforeWithOtherValues(error);
          return kit.render(
            reply,
            (error as { status: number }).status,
            'consent-charge',
            await formPage(
              signed,
              id,
              values,
              sentBefore ? SENT_BEFORE : chargeRefusal(problem.message),
              sentBefore ? newConfirmationKey() : formKey,
            ),
          );
        }
      },
      { permission: 'recurring.manage', post: true },
    ),
  );
}

/** A refused charge as the page says it: the API's amounts ("50.00 NZD") as the dashboard shows money. */
const chargeRefusal = (apiMessage: string) => `${withShownMoney(apiMessage)}. Nothing was charged.`;

const emptyCharge: ChargeValues = { amount: '', reference: '' };

function valuesOf(form: Record<string, unknown>): ChargeValues {
  return { amount: text(form.amount, 30), reference: text(form.reference, 40) };
}

/** What is wrong with the typed amount or reference, in the form's words; null when both are fine. */
function problemOfValues(values: ChargeValues): string | null {
  const cents = values.amount ? parseAmount(amountText(values.amount)) : null;
  if (cents === null || cents === 0)
    return '“Amount (NZD)” must be an amount of money. Enter dollars and cents, such as 25.00.';
  if (apiBodyProblem(referenceSchema, values.reference))
    return '“Statement reference” is not in a form Tono takes. Leave it blank, or enter up to 12 letters, digits or hyphens.';
  return null;
}

type ConsentView = Awaited<ReturnType<typeof retrieveConsent>>['recurring_consent'];

/** What the consent's limits still allow once this charge is taken, in one or two sentences. */
export function leftAfter(consent: ConsentView, cents: number): string {
  const period = THIS_PERIOD[consent.limits.period];
  const parts = [`${displayAmount(centsOf(consent.usage.period.remaining.value) - cents)} ${period}`];
  const { remaining_amount: totalLeft, remaining_count: countLeft } = consent.usage.total;
  if (totalLeft) parts.push(`${displayAmount(centsOf(totalLeft.value) - cents)} in all`);
  if (countLeft !== null) parts.push(`${countLeft - 1} more payment${countLeft - 1 === 1 ? '' : 's'}`);
  return `After it, the consent leaves ${parts.join(', ')}.`;
}

const centsOf = (value: string) => parseAmount(value) ?? 0;
