import type { ModuleManifest } from '../manifest.ts';
import { MailDispatcher } from './mail.dispatcher.ts';
import { countTestMessages, deleteTestMessages } from './mail.repo.ts';

/** Email: every message is a job, sent once over SMTP (or written to DATA_DIR/mail) by a batched lane. */
export const mailModule: ModuleManifest = {
  name: 'mail',
  runners: (deps) => [new MailDispatcher(deps)],
  // The records of test-mode messages; a message already sent stays where it went.
  testData: {
    kinds: { emails: 'Email records' },
    count: async (db, userId) => ({ emails: await countTestMessages(db, userId) }),
    delete: async (trx, userId) => ({ emails: await deleteTestMessages(trx, userId) }),
  },
};
