import type { ModuleManifest } from '../manifest.ts';
import { recurringCheckout } from './authorise.service.ts';
import { registerConsentRoutes } from './consents.routes.ts';
import { countTestConsents, deleteTestConsents, holdTestConsents, sealConsentAccessTokens } from './consents.repo.ts';
import { EXPIRE_CONSENT_JOB, expireConsentJob, REVOKE_AT_BANK_JOB, revokeAtBankJob } from './consents.service.ts';
import { payRecurring } from './consents.test-helpers.ts';
import {
  RECOVER_EXECUTIONS_JOB,
  recoverExecutionsJob,
  scheduleExecutionRecovery,
  SETTLE_EXECUTION_JOB,
  settleExecutionJob,
} from './execute.service.ts';

/** Recurring consents: authorised at the bank, charged by the merchant within limits, revoked. */
export const consentsModule: ModuleManifest = {
  name: 'consents',
  routes: (app, deps) => registerConsentRoutes(app, deps),
  jobs: [
    { name: EXPIRE_CONSENT_JOB, handler: expireConsentJob },
    { name: REVOKE_AT_BANK_JOB, handler: revokeAtBankJob },
    { name: SETTLE_EXECUTION_JOB, handler: settleExecutionJob },
    { name: RECOVER_EXECUTIONS_JOB, handler: recoverExecutionsJob },
  ],
  checkout: { recurring: (deps) => recurringCheckout(deps.config.serviceTimeZone) },
  payHelpers: { recurring: payRecurring },
  sealSecrets: (trx, secrets) => sealConsentAccessTokens(trx, (secret) => secrets.seal(secret)),
  start: scheduleExecutionRecovery,
  testData: {
    kinds: { recurring_consents: 'Recurring consents' },
    count: async (db, userId) => ({ recurring_consents: await countTestConsents(db, userId) }),
    hold: holdTestConsents,
    delete: async (trx, userId) => ({ recurring_consents: await deleteTestConsents(trx, userId) }),
  },
};
