import { addBankAccount, listBankAccountsOf } from '../../merchants/merchants.service.ts';
import { BANK_ACCOUNT_FORM } from '../../merchants/bank-account-number.ts';
import { formOf, problemOf, type Kit, type Scope, type Signed } from '../dashboard.kit.ts';
import { text } from '../dashboard.format.ts';
import { formKeyOf, isSentBeforeWithOtherValues, newConfirmationKey, SENT_BEFORE } from '../dashboard.forms.ts';
import { idempotent } from '../../../http/idempotency.ts';

// Bank accounts payments are made into: a list, and adding one, checked with the bank account
// number's check digits (the same check as `bank-accounts add`).

const hidden = { schema: { hide: true } };
/** The longest account name the form takes: the name is the merchant's own label in lists. */
const MAX_NAME_LENGTH = 100;

/** What is wrong with the form, and the input it is about (none for the form as a whole). */
type FormProblem = { input: 'account_number' | 'name' | null; message: string };

/** The refusal of an account number, with how to write one. */
const badNumber = (number: string): FormProblem => ({
  input: 'account_number',
  message: number
    ? `That is not a valid New Zealand bank account number: enter it as ${BANK_ACCOUNT_FORM}.`
    : `Enter the account number, as ${BANK_ACCOUNT_FORM}.`,
});

/** A failure of the add, said as what it is. */
function problemOfAdd(error: unknown, values: { account_number: string }): FormProblem | null {
  if (isSentBeforeWithOtherValues(error)) return { input: null, message: SENT_BEFORE };
  const problem = problemOf(error);
  if (!problem) return null;
  if (problem.field === 'account_number') return badNumber(values.account_number);
  return { input: null, message: problem.message };
}

export function registerBankAccountPages(scope: Scope, kit: Kit): void {
  const deps = kit.deps;
  const page = async (
    signed: Signed,
    values: Record<string, string>,
    error: FormProblem | null,
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
        // Not cut to the limit: a name over it is refused and shown again, not saved shortened.
        const values = { account_number: text(form.account_number, 40), name: text(form.name, 1000) };
        const formKey = formKeyOf(form);
        const again = (problem: FormProblem, key: string | undefined) =>
          page(signed, values, problem, null, key).then((shown) => kit.render(reply, 400, 'bank-accounts', shown));
        if (values.name.length > MAX_NAME_LENGTH)
          return again(
            {
              input: 'name',
              message: `“Name” can be at most ${MAX_NAME_LENGTH} characters: shorten it.`,
            },
            formKey ?? undefined,
          );
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
          const problem = problemOfAdd(error, values);
          if (!problem) throw error;
          // After a form sent before with other values, a new key lets this one be sent as itself.
          return again(problem, isSentBeforeWithOtherValues(error) ? newConfirmationKey() : (formKey ?? undefined));
        }
        return reply.redirect(`${signed.base}/bank-accounts?done=added`, 303);
      },
      { permission: 'bank_settings.manage', post: true },
    ),
  );
}
