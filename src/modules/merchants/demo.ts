import { anyMerchant, createMerchant, findMerchantByEmail, type CreatedMerchant } from './merchants.service.ts';
import type { Deps } from '../context.ts';

export const DEMO_EMAIL = 'demo@tono.example';
export const DEMO_BANK_ACCOUNT = '12-3456-7890138-00';

/**
 * On the first start against an empty database, a merchant to try everything with. Later starts
 * get 'exists' while the demo merchant is there, and null once the database has only real merchants.
 */
export async function ensureDemoMerchant(deps: Pick<Deps, 'db' | 'clock'>): Promise<CreatedMerchant | 'exists' | null> {
  if (await anyMerchant(deps.db)) return (await findMerchantByEmail(deps.db, DEMO_EMAIL)) ? 'exists' : null;
  return createMerchant(deps.db, deps.clock, {
    name: 'Demo Store',
    email: DEMO_EMAIL,
    bankAccount: DEMO_BANK_ACCOUNT,
    keyNamePrefix: 'Demo',
    createdBy: 'first start',
  });
}
