import type { ModuleManifest } from '../manifest.ts';
import { payerAccountJob, reconcilePaymentJob, sweepPaymentJob } from './payments.jobs.ts';
import { RECONCILE_PAYMENT_JOB, SWEEP_PAYMENT_JOB } from './one-off.service.ts';
import { countTestPayments, deleteTestPayments, holdTestPayments } from './payments.repo.ts';
import { registerPaymentRoutes } from './payments.routes.ts';
import { PAYER_ACCOUNT_JOB } from './payments.service.ts';

/** Payments: one-off payments at the bank, their reconciliation, and the payments API. */
export const paymentsModule: ModuleManifest = {
  name: 'payments',
  routes: (app, deps) => registerPaymentRoutes(app, deps),
  jobs: [
    { name: SWEEP_PAYMENT_JOB, handler: sweepPaymentJob },
    { name: RECONCILE_PAYMENT_JOB, handler: reconcilePaymentJob },
    { name: PAYER_ACCOUNT_JOB, handler: payerAccountJob },
  ],
  testData: {
    kinds: { payments: 'Payments' },
    count: async (db, userId) => ({ payments: await countTestPayments(db, userId) }),
    hold: holdTestPayments,
    delete: async (trx, userId) => ({ payments: await deleteTestPayments(trx, userId) }),
  },
};
