import type { Mode } from '../../shared/mode.ts';

// Row types of the mail module, merged into the store's Database in src/store/tables.ts.

export interface MailMessagesTable {
  id: string;
  to_address: string;
  /** A template name of mail.templates.ts. */
  template: string;
  /** The template's data (JSON), sealed when it holds a secret (a one-time code). */
  data: string;
  /** What the message is about: a subscription, a recurring consent, a payment, a webhook endpoint… */
  related_type: string | null;
  related_id: string | null;
  /**
   * The merchant it concerns, when one does. In test mode, only mail to the merchant's own people
   * goes by SMTP; the rest, and all of it without SMTP, is a file per message, the newest of each
   * merchant's kept (mail.delivery.ts).
   */
  user_id: string | null;
  mode: Mode | null;
  /** queued | sent | failed */
  status: string;
  attempts: number;
  last_error: string | null;
  /** At most one message per key: the same notice is never queued twice. */
  dedupe_key: string | null;
  created_at: number;
  sent_at: number | null;
}

export interface MailTables {
  mail_messages: MailMessagesTable;
}

declare module '../../store/tables.ts' {
  interface Database extends MailTables {}
}
