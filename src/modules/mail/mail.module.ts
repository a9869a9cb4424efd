import type { ModuleManifest } from '../manifest.ts';
import { createMailSender, SEND_MAIL_JOB, sendMailJob } from './mail.service.ts';

/** Email: every message is a job, sent once over SMTP (or written to DATA_DIR/mail). */
export const mailModule: ModuleManifest = {
  name: 'mail',
  jobs: [{ name: SEND_MAIL_JOB, handler: (deps) => sendMailJob(deps, createMailSender(deps.config, deps.log.child({ component: 'mail' }))) }],
};
