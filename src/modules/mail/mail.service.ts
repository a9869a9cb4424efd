import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Config } from '../../config.ts';
import { enqueue } from '../../jobs/queue.ts';
import { newId } from '../../shared/ids.ts';
import { isSealed, type SecretBox } from '../../shared/secret-box.ts';
import type { Database } from '../../store/tables.ts';
import { renderMail, RESENDABLE_TO_PAYER, subjectOf, type TemplateData, type TemplateName } from './mail.templates.ts';
import type { Mode } from '../../shared/mode.ts';
import { insertMessage, messagesAbout, ownedMessage, type MailRow } from './mail.repo.ts';
import { notFound } from '../../shared/errors.ts';
import { recordAuditFor } from '../audit/audit.service.ts';
import type { Ctx } from '../context.ts';
import { createMailDelivery, type DeliverySettings, type OutgoingMail as Delivered } from './mail.delivery.ts';

// Email: a message is a row written in the caller's transaction with a job to send it, so a
// crash between the change and the send loses nothing. The job sends with a Message-ID made from
// the row's id, so a retry after a send whose result was lost is the same message, not a second
// one. The jobs run on a batched lane (mail.dispatcher.ts). With SMTP_URL, nodemailer sends over a
// small pool of connections (TLS for smtps:, STARTTLS when the server offers it); without, the
// message is written to DATA_DIR/mail/<id>.eml (a merchant's test mail to DATA_DIR/mail/test/<user
// id>/<id>.eml, of which only the newest are kept) and its subject logged. A merchant's test-mode
// message to anyone but the merchant's own people is written to that folder even with SMTP_URL
// (mail.delivery.ts, docs/email.md).

export const SEND_MAIL_JOB = 'mail.send';

declare module '../../jobs/queue.ts' {
  interface JobPayloads {
    'mail.send': { id: string };
  }
}

export type QueueMail<K extends TemplateName = TemplateName> = {
  to: string;
  template: K;
  data: TemplateData[K];
  related?: { type: string; id: string } | null;
  /** The merchant the message concerns, if any. */
  owner?: { userId: string; mode: Mode } | null;
  /** At most one message per key, ever: a notice queued twice (a retried transaction) is sent once. */
  dedupeKey?: string | null;
};

/**
 * Queues a message in the caller's transaction; returns its id, or null when its dedupe key was
 * queued already. `sealWith` seals the data at rest, for a message that carries a secret.
 */
export async function queueMail<K extends TemplateName>(
  db: Kysely<Database>,
  mail: QueueMail<K>,
  now: number,
  sealWith?: SecretBox,
): Promise<string | null> {
  const id = newId('mail');
  const inserted = await insertMessage(db, {
    id,
    to_address: mail.to.trim().toLowerCase(),
    template: mail.template,
    data: sealWith ? sealWith.seal(JSON.stringify(mail.data)) : JSON.stringify(mail.data),
    related_type: mail.related?.type ?? null,
    related_id: mail.related?.id ?? null,
    user_id: mail.owner?.userId ?? null,
    mode: mail.owner?.mode ?? null,
    status: 'queued',
    attempts: 0,
    last_error: null,
    dedupe_key: mail.dedupeKey ?? null,
    created_at: now,
    sent_at: null,
  });
  if (!inserted) return null;
  // Due at once in real time: `now` may be a merchant's test clock, which the job runner does not follow for mail.
  await enqueue(db, { kind: SEND_MAIL_JOB, runAt: 0, payload: { id }, batched: true }, Date.now());
  return id;
}

export type OutgoingMail = Delivered & { linkOrCode: string };

/** Where messages go: SMTP, or .eml files for the laptop start. */
export type MailSender = { send(mail: OutgoingMail): Promise<void>; close(): Promise<void> };

export function createMailSender(
  config: Pick<Config, 'smtpUrl' | 'dataDir' | 'mailFrom' | 'publicBaseUrl'>,
  log: Logger,
  options: Pick<DeliverySettings, 'testMailKept'> = {},
): MailSender {
  const delivery = createMailDelivery({
    smtpUrl: config.smtpUrl,
    dataDir: config.dataDir,
    mailFrom: config.mailFrom,
    publicBaseUrl: config.publicBaseUrl,
    ...options,
  });
  return {
    async send({ linkOrCode, ...mail }) {
      const file = await delivery.deliver(mail);
      // Written rather than sent: the log says what a person needs from the message to go on (the
      // laptop start), or, with SMTP_URL, that test mode kept it from a stranger.
      if (file !== null)
        log.info(
          { mail_id: mail.id, to: mail.to, file },
          `mail written (${config.smtpUrl ? "test mode, not to the merchant's own address" : 'no SMTP_URL'}): "${mail.subject}" ${linkOrCode}`,
        );
    },
    async close() {
      delivery.close();
    },
  };
}

/**
 * A queued message as it goes out: its data opened, rendered, with its link (or code) for the log.
 * `toOwnAddress`: whether its address is one of its merchant's own (the lane reads them), which
 * decides whether a test-mode message may go by SMTP.
 */
export function outgoingMailOf(row: MailRow, secrets: SecretBox, baseUrl: string, toOwnAddress = false): OutgoingMail {
  const template = row.template as TemplateName;
  const data = JSON.parse(isSealed(row.data) ? secrets.open(row.data) : row.data) as TemplateData[TemplateName];
  const link = linkFor(template, data, baseUrl);
  const linkOrCode = template === 'payer_code' ? `code ${(data as TemplateData['payer_code']).code}` : link;
  const owner = row.user_id !== null && row.mode !== null ? { userId: row.user_id, mode: row.mode } : null;
  return { id: row.id, to: row.to_address, ...renderMail(template, data, link), owner, toOwnAddress, linkOrCode };
}

function linkFor(template: TemplateName, data: TemplateData[TemplateName], baseUrl: string): string {
  if (template === 'merchant_password_reset')
    return `${baseUrl}/dashboard/reset/${(data as TemplateData['merchant_password_reset']).token}`;
  if (template === 'team_invitation')
    return `${baseUrl}/dashboard/invitations/${(data as TemplateData['team_invitation']).token}`;
  return template === 'webhook_failing' || template === 'webhook_disabled' ? `${baseUrl}/docs` : `${baseUrl}/customer`;
}

/** A message to a payer, as the merchant's page of what it was about lists it. */
export type PayerMessage = {
  id: string;
  to: string;
  subject: string;
  status: string;
  created_at: number;
  sent_at: number | null;
};

/** The most messages an object's page lists. */
const MESSAGES_LISTED = 50;

/**
 * The messages to payers about some of the merchant's objects (a payment and its receipt, say) in
 * the caller's mode, newest first: only those the dashboard can send again (RESENDABLE_TO_PAYER),
 * none with a secret in them.
 */
export async function payerMessagesAbout(
  ctx: Ctx,
  related: ReadonlyArray<{ type: string; id: string }>,
): Promise<PayerMessage[]> {
  const owner = { userId: ctx.merchant.id, mode: ctx.mode };
  const rows = (await Promise.all(related.map((one) => messagesAbout(ctx.db, owner, one, MESSAGES_LISTED))))
    .flat()
    .filter(resendable)
    .sort((a, b) => Number(b.created_at) - Number(a.created_at) || b.id.localeCompare(a.id))
    .slice(0, MESSAGES_LISTED);
  return rows.map((row) => ({
    id: row.id,
    to: row.to_address,
    subject: subjectOf(row.template as TemplateName, JSON.parse(row.data)),
    status: row.status,
    created_at: Number(row.created_at),
    sent_at: row.sent_at === null ? null : Number(row.sent_at),
  }));
}

const resendable = (row: MailRow) => RESENDABLE_TO_PAYER.has(row.template as TemplateName) && !isSealed(row.data);

/**
 * A message is sent again at most once in a minute of real time (a second click, a form posted
 * twice): the copy's dedupe key names the minute.
 */
const RESEND_WINDOW_MS = 60_000;

/**
 * Queues a copy of one of the merchant's messages to a payer, to the same address with the same
 * content, and records who asked in the audit trail under the object the message is about. Another
 * merchant's message, another mode's, or one that is never sent again is not found. Returns the
 * copy's id, or null when the same message was sent again in this minute (nothing queued).
 */
export async function resendPayerMessage(
  ctx: Ctx,
  id: string,
): Promise<{ id: string | null; related: { type: string; id: string } | null }> {
  return ctx.deps.store.transaction(async (trx) => {
    const original = await ownedMessage(trx, { userId: ctx.merchant.id, mode: ctx.mode }, id);
    if (!original || !resendable(original)) throw notFound('message', id);
    const related =
      original.related_type !== null && original.related_id !== null
        ? { type: original.related_type, id: original.related_id }
        : null;
    const now = ctx.clock.now();
    const copy = await queueMail(
      trx,
      {
        to: original.to_address,
        template: original.template as TemplateName,
        data: JSON.parse(original.data),
        related,
        owner: { userId: ctx.merchant.id, mode: ctx.mode },
        dedupeKey: `resend:${original.id}:${Math.floor(Date.now() / RESEND_WINDOW_MS)}`,
      },
      now,
    );
    if (copy !== null)
      await recordAuditFor(trx, ctx, 'email.resend', related?.id ?? original.id, {
        message: original.id,
        copy,
        to: original.to_address,
        template: original.template,
      });
    return { id: copy, related };
  });
}
