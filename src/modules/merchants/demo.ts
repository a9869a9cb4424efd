import type { Deps } from '../../http/context.ts';
import { createMerchant, type CreatedMerchant } from './merchants.service.ts';

export const DEMO_EMAIL = 'demo@tono.example';
export const DEMO_BANK_ACCOUNT = '12-3456-7890138-00';

/** On the first start against an empty database, a merchant to try everything with. */
export async function ensureDemoMerchant(deps: Deps): Promise<CreatedMerchant | null> {
  const anyone = await deps.db.selectFrom('users').select('id').limit(1).executeTakeFirst();
  if (anyone) return null;
  return createMerchant(deps.db, deps.clock, { name: 'Demo Store', email: DEMO_EMAIL, bankAccount: DEMO_BANK_ACCOUNT });
}
