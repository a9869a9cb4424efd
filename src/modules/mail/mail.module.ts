import type { ModuleManifest } from '../manifest.ts';
import { MailDispatcher } from './mail.dispatcher.ts';

/** Email: every message is a job, sent once over SMTP (or written to DATA_DIR/mail) by a batched lane. */
export const mailModule: ModuleManifest = {
  name: 'mail',
  runners: (deps) => [new MailDispatcher(deps)],
};
