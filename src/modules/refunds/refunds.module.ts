import type { ModuleManifest } from '../manifest.ts';
import { completeAuthorityReturn } from './refunds.authority.ts';
import { executeRefundJob } from './refunds.execute.ts';
import { countTestRefunds, deleteTestRefunds, holdTestRefunds } from './refunds.repo.ts';
import { registerRefundRoutes } from './refunds.routes.ts';
import { EXECUTE_REFUND_JOB } from './refunds.service.ts';

/** Refunds: money back to the payer's account under the merchant's refund authority, or by hand. */
export const refundsModule: ModuleManifest = {
  name: 'refunds',
  routes: (app, deps) => registerRefundRoutes(app, deps),
  jobs: [{ name: EXECUTE_REFUND_JOB, handler: executeRefundJob }],
  bankReturns: [completeAuthorityReturn],
  testData: {
    kinds: { refunds: 'Refunds' },
    count: async (db, userId) => ({ refunds: await countTestRefunds(db, userId) }),
    hold: holdTestRefunds,
    delete: async (trx, userId) => ({ refunds: await deleteTestRefunds(trx, userId) }),
  },
};
