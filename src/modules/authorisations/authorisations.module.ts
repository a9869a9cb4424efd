import type { ModuleManifest } from '../manifest.ts';
import { requestIdsOf } from '../requests/requests.service.ts';
import { deleteAuthorisationsOfRequests } from './authorisations.repo.ts';
import { GIVE_BACK_CONSENT_JOB, giveBackConsentJob } from './authorisations.service.ts';

/** Enduring consents authorised at the payer's bank, for recurring consents and subscriptions. */
export const authorisationsModule: ModuleManifest = {
  name: 'authorisations',
  jobs: [{ name: GIVE_BACK_CONSENT_JOB, handler: giveBackConsentJob }],
  // Approvals of test requests at the bank: part of their requests, counted with them.
  testData: {
    kinds: {},
    count: async () => ({}),
    delete: async (trx, userId) => {
      await deleteAuthorisationsOfRequests(trx, requestIdsOf(trx, { userId, mode: 'test' }));
      return {};
    },
  },
};
