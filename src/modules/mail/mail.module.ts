import type { ModuleManifest } from '../manifest.ts';
import { MailDispatcher } from './mail.dispatcher.ts';
import { SEND_MAIL_JOB } from './mail.service.ts';

/** Email: every message is a job, sent once over SMTP (or written to DATA_DIR/mail) by a batched lane. */
export const mailModule: ModuleManifest = {
  name: 'mail',
  batchedJobs: [SEND_MAIL_JOB],
  runners: (deps) => [new MailDispatcher(deps)],
};
