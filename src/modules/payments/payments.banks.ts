import type { Kysely } from 'kysely';
import type { Database } from '../../store/tables.ts';
import type { BankConnector, Creditor, Remittance } from '../banks/bank-connector.ts';
import { TEST_ACCOUNT } from './payments.rules.ts';
import type { Deps } from '../context.ts';
import type { PaymentRow } from './payments.tables.ts';
import { bankAccountWithOwner } from '../merchants/merchants.service.ts';

/** The banks a payer can choose in this mode (none in live mode until BANKS_FILE names some). */
export function banksFor(deps: Deps, mode: 'live' | 'test'): Array<{ id: string; name: string }> {
  return deps.banks.list(mode);
}

export function connectorFor(deps: Deps, bankId: string | null, mode: string): BankConnector | null {
  if (!bankId) return null;
  return deps.banks.connectorFor(bankId, mode as 'live' | 'test');
}

/** The redirect URI registered for the service at every bank. */
export function bankReturnUrl(deps: Deps): string {
  return `${deps.config.publicBaseUrl}/pay/return`;
}

/** Who is paid: the merchant's account live; the service's test account in test mode. */
export async function creditorOf(
  db: Kysely<Database>,
  request: { mode: string; user_id: string; bank_account_id: string },
): Promise<Creditor> {
  if (request.mode === 'test') return { ...TEST_ACCOUNT };
  const row = await bankAccountWithOwner(db, request.bank_account_id);
  return { name: row.name ?? row.merchant_name, accountNumber: row.account_number };
}

export function remittanceOf(payment: Pick<PaymentRow, 'particulars' | 'code' | 'reference'>): Remittance {
  return { particulars: payment.particulars, code: payment.code, reference: payment.reference ?? '' };
}
