import type { ModuleManifest } from '../manifest.ts';
import { GIVE_BACK_CONSENT_JOB, giveBackConsentJob } from './authorisations.service.ts';

/** Enduring consents authorised at the payer's bank, for recurring consents and subscriptions. */
export const authorisationsModule: ModuleManifest = {
  name: 'authorisations',
  jobs: [{ name: GIVE_BACK_CONSENT_JOB, handler: giveBackConsentJob }],
};
