import { addBankAccount, listBankAccountsOf } from '../../merchants/merchants.service.ts';
import { BANK_ACCOUNT_FORM } from '../../merchants/bank-account-number.ts';
import { formOf, problemOf, type Kit, type Scope, type Signed } from '../dashboard.kit.ts';
import { text } from '../dashboard.format.ts';
import { formKeyOf, isSentBeforeWithOtherValues, newConfirmationKey, SENT_BEFORE } from '../dashboard.forms.ts';
import { idempotent } from '../../../http/idempotency.ts';

// Bank accounts payments are made into: a list, and adding one, checked with the bank account
// number's check digits (the same check as `bank-accounts add`).

const hidden = { schema: { hide: true } };

export function registerBankAccountPages(scope: Scope, kit: Kit): void {
  const deps = kit.deps;
  const page = async (
    signed: Signed,
    values: Record<string, string>,
    error: string | null,
    flash: string | null = null,
    formKey: string = newConfirmationKey(),
  ) => ({
    title: 'Bank accounts',
    ...kit.layoutOf(signed, 'bank-accounts'),
    accounts: await listBankAccountsOf(deps.db, signed.session.merchant.id),
    values,
    error,
    flash,
    form: BANK_ACCOUNT_FORM,
    // The add form's one-time key: a second post of it adds nothing and answers as the first.
    formKey,
  });

  scope.get(
    '/dashboard/:mode/bank-accounts',
    hidden,
    kit.guard(
      async (request, reply, signed) =>
        kit.render(
          reply,
          200,
          'bank-accounts',
          await page(signed, {}, null, text(request.query.done) === 'added' ? 'The bank account is added.' : null),
        ),
      { permission: 'read' },
    ),
  );

  scope.post(
    '/dashboard/:mode/bank-accounts',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const form = formOf(request);
        const values = { account_number: text(form.account_number, 40), name: text(form.name, 100) };
        const formKey = formKeyOf(form);
        try {
          // A repeat of the form's key (a double click) adds nothing and answers as the first did.
          await idempotent(signed.ctx, formKey ?? undefined, 'dashboard POST /bank-accounts', values, 201, (trx) =>
            addBankAccount(
              trx,
              deps.clock,
              signed.session.merchant.id,
              values.account_number,
              values.name || null,
              signed.ctx,
            ),
          );
        } catch (error) {
          const sentBefore = isSentBeforeWithOtherValues(error);
          if (!sentBefore && !problemOf(error)) throw error;
          return kit.render(
            reply,
            400,
            'bank-accounts',
            await page(
              signed,
              values,
              sentBefore
                ? SENT_BEFORE
                : `That is not a valid New Zealand bank account number: enter it as ${BANK_ACCOUNT_FORM}.`,
              null,
              sentBefore ? newConfirmationKey() : (formKey ?? undefined),
            ),
          );
        }
        return reply.redirect(`${signed.base}/bank-accounts?done=added`, 303);
      },
      { permission: 'bank_settings.manage', post: true },
    ),
  );
}
