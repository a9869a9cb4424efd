import { contentSecurityPolicy } from '../../../http/pages.ts';
import { AppError, notFound } from '../../../shared/errors.ts';
import type { Mode } from '../../../shared/mode.ts';
import { listBankAccountsOf } from '../../merchants/merchants.service.ts';
import { bankReturnUrl, banksFor, connectorFor } from '../../payments/payments.banks.ts';
import { authorityViewFor, revokeAuthority, sandboxHolderOf, startAuthority } from '../../refunds/refunds.authority.ts';
import { RefundPeriod, TEST_AUTHORITY_LIMITS } from '../../refunds/refunds.rules.ts';
import type { Deps } from '../../context.ts';
import { oneOf, text } from '../dashboard.format.ts';
import { dollarsToCents } from '../dashboard.forms.ts';
import { formOf, problemOf, type Kit, type Scope, type Signed } from '../dashboard.kit.ts';

// The refund authority (docs/refunds.md): the one in force, with its limits and what this period
// has used, turned off here (after confirming); past ones; and turning refunds on — a consent at
// the merchant's bank over one of its accounts, with the limits set here, approved at the bank (the
// form is answered by a redirect to it, so this page's form-action names the mode's banks as well
// as the dashboard).

const hidden = { schema: { hide: true } };

type AuthorityValues = {
  bank_id: string;
  bank_account_id: string;
  period: string;
  max_per_refund: string;
  max_per_period: string;
};

const PERIOD_LABELS: Record<RefundPeriod, { each: string; this: string }> = {
  daily: { each: 'Each day', this: 'today' },
  weekly: { each: 'Each week', this: 'this week' },
  monthly: { each: 'Each month', this: 'this month' },
};

/** The origins a bank's approval page is at, for the turn-on form's form-action. */
function bankOrigins(deps: Deps, mode: Mode): string[] {
  const origins = new Set<string>();
  for (const bank of banksFor(deps, mode)) {
    const connector = connectorFor(deps, bank.id, mode);
    if (!connector) continue;
    try {
      origins.add(
        new URL(connector.authoriseUrl({ consentId: 'x', redirectUri: bankReturnUrl(deps), state: 'x' })).origin,
      );
    } catch {
      // A bank whose approval address is not a URL cannot be sent to; it is left out.
    }
  }
  return [...origins];
}

/** A bank's name as the pages show it; its id when the bank is no longer connected. */
function bankNameOf(deps: Deps, mode: Mode, id: string): string {
  return banksFor(deps, mode).find((bank) => bank.id === id)?.name ?? id;
}

function valuesOf(form: Record<string, unknown>): AuthorityValues {
  return {
    bank_id: text(form.bank_id, 100),
    bank_account_id: text(form.bank_account_id, 100),
    period: text(form.period, 20),
    max_per_refund: text(form.max_per_refund, 30),
    max_per_period: text(form.max_per_period, 30),
  };
}

type PageOf = ReturnType<typeof authorityPage>;

export function registerRefundAuthorityPages(scope: Scope, kit: Kit): void {
  const page = authorityPage(kit);

  scope.get(
    '/dashboard/:mode/refunds/authority',
    hidden,
    kit.guard(
      async (request, reply, signed) =>
        kit.render(
          reply,
          200,
          'refund-authority',
          await page(signed, null, null, flashOf(request.query)),
          policyOf(kit.deps, signed.mode),
        ),
      { permission: 'read' },
    ),
  );
  registerTurnOn(scope, kit, page);
  registerTurnOff(scope, kit);
}

/** One of the merchant's authorities in this mode, in force or past; another's is 404, as the API's are. */
async function ownAuthority(signed: Signed, id: string) {
  const { active, past } = await authorityViewFor(signed.ctx);
  const found = [...(active ? [active] : []), ...past].find((row) => row.id === id);
  if (!found) throw notFound('refund_authority', id);
  return found;
}

/**
 * "Turn off refunds" asks first, on a page of its own (docs/dashboard.md): Tono cannot undo it, and
 * turning refunds on again means the bank's approval again.
 */
function registerTurnOff(scope: Scope, kit: Kit): void {
  scope.get(
    '/dashboard/:mode/refunds/authority/:id/revoke',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const authority = await ownAuthority(signed, request.params.id);
        if (authority.status !== 'active')
          return kit.message(
            reply,
            409,
            'Refunds are off already',
            'This refund authority is not in force, so there is nothing to turn off. Nothing was changed.',
            signed,
            'refunds',
          );
        return kit.render(reply, 200, 'confirm', {
          title: 'Turn off refunds',
          ...kit.layoutOf(signed, 'refunds'),
          heading: `Turn off refunds from your account at ${bankNameOf(kit.deps, signed.mode, authority.bank_id)}?`,
          consequence:
            'Tono stops paying refunds for you and the refund authority is revoked at your bank. Refunds already made go on; new ones are for you to pay by hand. To turn refunds on again, you approve a new refund authority at your bank.',
          action: `${signed.base}/refunds/authority/${authority.id}/revoke`,
          confirm: 'Yes, turn off refunds',
          back: `${signed.base}/refunds/authority`,
        });
      },
      { permission: 'bank_settings.manage' },
    ),
  );

  scope.post(
    '/dashboard/:mode/refunds/authority/:id/revoke',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        await revokeAuthority(signed.ctx, request.params.id);
        return reply.redirect(`${signed.base}/refunds/authority?done=off`, 303);
      },
      { permission: 'bank_settings.manage', post: true },
    ),
  );
}

/** The page's policy: the dashboard's, with the mode's banks allowed to answer its form. */
const policyOf = (deps: Deps, mode: Mode) =>
  contentSecurityPolicy({ scripts: true, styles: 'self', images: true, formsTo: bankOrigins(deps, mode) });

function flashOf(query: Record<string, unknown>): string | null {
  const outcome = text(query.outcome);
  if (outcome === 'approved') return 'Your bank approved the refund authority: refunds are turned on.';
  if (outcome === 'declined')
    return 'Your bank did not approve the refund authority: nothing changed. Refunds stay as they were.';
  if (text(query.done) === 'off') return 'Refunds are turned off: new refunds are yours to pay by hand.';
  return null;
}

/** What the page shows: the authority in force with its usage, past ones, and the turn-on form. */
function authorityPage(kit: Kit) {
  const deps = kit.deps;
  return async (
    signed: Signed,
    values: AuthorityValues | null,
    error: { input: string; message: string } | null,
    flash: string | null,
  ) => {
    const [view, accounts] = await Promise.all([
      authorityViewFor(signed.ctx),
      listBankAccountsOf(deps.db, signed.session.merchant.id),
    ]);
    const banks = banksFor(deps, signed.mode);
    const bankName = (id: string) => bankNameOf(deps, signed.mode, id);
    const label = (period: string) => PERIOD_LABELS[period as RefundPeriod] ?? { each: period, this: 'this period' };
    return {
      title: 'Refund authority',
      ...kit.layoutOf(signed, 'refunds'),
      active: view.active && {
        ...view.active,
        bankName: bankName(view.active.bank_id),
        periodLabel: label(view.active.period),
        leftCents: Math.max(0, view.active.max_per_period_cents - view.active.usedCents),
      },
      past: view.past.map((row) => ({ ...row, bankName: bankName(row.bank_id), periodLabel: label(row.period) })),
      banks,
      accounts,
      periods: RefundPeriod.map((period) => ({ value: period, label: PERIOD_LABELS[period].each })),
      values: values ?? {
        bank_id: banks[0]?.id ?? '',
        bank_account_id: accounts[0]?.id ?? '',
        period: 'monthly',
        max_per_refund: '',
        max_per_period: '',
      },
      testUsername: signed.mode === 'test' ? sandboxHolderOf(signed.session.merchant.id) : null,
      testLimits: TEST_AUTHORITY_LIMITS,
      error,
      flash,
    };
  };
}

type Limits = { period: RefundPeriod; max_per_refund_cents: number; max_per_period_cents: number };

/** The typed form as an authority's bank and limits, or the field that is wrong and why. */
function checkedForm(
  deps: Deps,
  mode: Mode,
  values: AuthorityValues,
): { limits: Limits } | { input: string; message: string } {
  if (!banksFor(deps, mode).some((bank) => bank.id === values.bank_id))
    return { input: 'bank_id', message: 'Choose one of the banks listed.' };
  if (!values.bank_account_id)
    return { input: 'bank_account_id', message: 'Choose the account refunds are paid from.' };
  const period = oneOf(values.period, RefundPeriod);
  if (!period) return { input: 'period', message: 'Choose a period for the limit.' };
  const perRefund = dollarsToCents(values.max_per_refund);
  if (perRefund === null || !Number.isSafeInteger(perRefund) || perRefund <= 0)
    return {
      input: 'max_per_refund',
      message: '“Most for one refund” must be an amount of money more than $0.00, such as 500.00.',
    };
  const perPeriod = dollarsToCents(values.max_per_period);
  if (perPeriod === null || !Number.isSafeInteger(perPeriod) || perPeriod <= 0)
    return {
      input: 'max_per_period',
      message: '“Most each period” must be an amount of money more than $0.00, such as 2000.00.',
    };
  if (perPeriod < perRefund)
    return { input: 'max_per_period', message: '“Most each period” must be at least “Most for one refund”.' };
  return { limits: { period, max_per_refund_cents: perRefund, max_per_period_cents: perPeriod } };
}

/** "Turn on refunds": the consent made at the bank, then the merchant sent there to approve it. */
function registerTurnOn(scope: Scope, kit: Kit, page: PageOf): void {
  scope.post(
    '/dashboard/:mode/refunds/authority',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const values = valuesOf(formOf(request));
        const again = async (status: number, input: string, message: string) =>
          kit.render(
            reply,
            status,
            'refund-authority',
            await page(signed, values, { input, message: `${message} Refunds stay as they were.` }, null),
            policyOf(kit.deps, signed.mode),
          );
        const checked = checkedForm(kit.deps, signed.mode, values);
        if ('input' in checked) return again(400, checked.input, checked.message);
        let started: Awaited<ReturnType<typeof startAuthority>>;
        try {
          started = await startAuthority(signed.ctx, {
            bankId: values.bank_id,
            bankAccountId: values.bank_account_id,
            limits: checked.limits,
          });
        } catch (error) {
          if (error instanceof AppError && error.code === 'service_unavailable')
            return again(503, 'bank_id', `${error.message}. Try again in a few minutes.`);
          const problem = problemOf(error);
          if (!problem) throw error;
          return again((error as AppError).status, problem.field ?? 'bank_id', problem.message);
        }
        return reply.redirect(started.authoriseUrl, 303);
      },
      { permission: 'bank_settings.manage', post: true },
    ),
  );
}
