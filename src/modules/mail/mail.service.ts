import fs from 'node:fs';
import path from 'node:path';
import type { Kysely } from 'kysely';
import nodemailer, { type Transporter } from 'nodemailer';
import type { Logger } from 'pino';
import type { Config } from '../../config.ts';
import { enqueue } from '../../jobs/queue.ts';
import type { JobHandler } from '../../jobs/worker.ts';
import { newId } from '../../shared/ids.ts';
import { isSealed, type SecretBox } from '../../shared/secret-box.ts';
import type { Database } from '../../store/tables.ts';
import { transact } from '../../store/tx.ts';
import { renderMail, type TemplateData, type TemplateName } from './mail.templates.ts';
import type { Mode } from '../../shared/mode.ts';
import type { Deps } from '../context.ts';
import { findMessage, insertMessage, updateMessage } from './mail.repo.ts';

// Email: a message is a row written in the caller's transaction with a job to send it, so a
// crash between the change and the send loses nothing. The job sends with a Message-ID made from
// the row's id, so a retry after a send whose result was lost is the same message, not a second
// one. With SMTP_URL, nodemailer sends it (TLS for smtps:, STARTTLS when the server offers it);
// without, it is written to DATA_DIR/mail/<id>.eml and its subject logged (docs/email.md).

export const SEND_MAIL_JOB = 'mail.send';
/** After this many failed tries the message is marked failed (the job runner stops too). */
const MAX_ATTEMPTS = 12;

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
export async function queueMail<K extends TemplateName>(db: Kysely<Database>, mail: QueueMail<K>, now: number, sealWith?: SecretBox): Promise<string | null> {
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
  await enqueue(db, { kind: SEND_MAIL_JOB, runAt: 0, payload: { id } }, Date.now());
  return id;
}

export type OutgoingMail = { id: string; to: string; subject: string; text: string; html: string; linkOrCode: string };

/** Where messages go: SMTP, or .eml files for the laptop start. */
export type MailSender = { send(mail: OutgoingMail): Promise<void>; close(): void };

export function createMailSender(config: Pick<Config, 'smtpUrl' | 'dataDir' | 'mailFrom' | 'publicBaseUrl'>, log: Logger): MailSender {
  const domain = new URL(config.publicBaseUrl).hostname || 'tono.invalid';
  const message = (mail: OutgoingMail) => ({
    from: config.mailFrom,
    to: mail.to,
    subject: mail.subject,
    text: mail.text,
    html: mail.html,
    messageId: `<${mail.id}@${domain}>`,
  });
  if (config.smtpUrl) {
    const transport: Transporter = nodemailer.createTransport(config.smtpUrl);
    return {
      async send(mail) {
        await transport.sendMail(message(mail));
      },
      close: () => transport.close(),
    };
  }
  const folder = path.join(config.dataDir, 'mail');
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
  return {
    async send(mail) {
      const info = await transport.sendMail(message(mail));
      const file = path.join(folder, `${mail.id}.eml`);
      // Written whole then renamed: a crash never leaves half a message behind. On the thread pool:
      // creating a file in a folder of thousands held the event loop for a sixth of a charge's time,
      // and API calls waited behind it. The folder is made when it is missing, not before every message.
      await fs.promises.writeFile(`${file}.tmp`, info.message as Buffer).catch(async (error: NodeJS.ErrnoException) => {
        if (error.code !== 'ENOENT') throw error;
        await fs.promises.mkdir(folder, { recursive: true });
        await fs.promises.writeFile(`${file}.tmp`, info.message as Buffer);
      });
      await fs.promises.rename(`${file}.tmp`, file);
      // No SMTP server: the laptop start logs what a person needs from the message to go on.
      log.info({ mail_id: mail.id, to: mail.to, file }, `mail written (no SMTP_URL): "${mail.subject}" ${mail.linkOrCode}`);
    },
    close: () => transport.close(),
  };
}

function linkFor(template: TemplateName, data: TemplateData[TemplateName], baseUrl: string): string {
  if (template === 'merchant_password_reset') return `${baseUrl}/dashboard/reset/${(data as TemplateData['merchant_password_reset']).token}`;
  return template === 'webhook_failing' || template === 'webhook_disabled' ? `${baseUrl}/docs` : `${baseUrl}/customer`;
}

/** The job that sends one queued message, recording each attempt on its row. */
export function sendMailJob(deps: Deps, sender: MailSender): JobHandler {
  return async (payload: { id: string }, context) => {
    const row = await findMessage(deps.db, payload.id);
    if (!row || row.status !== 'queued') return;
    const template = row.template as TemplateName;
    const data = JSON.parse(isSealed(row.data) ? deps.secrets.open(row.data) : row.data) as TemplateData[TemplateName];
    const link = linkFor(template, data, deps.config.publicBaseUrl);
    const rendered = renderMail(template, data, link);
    const linkOrCode = template === 'payer_code' ? `code ${(data as TemplateData['payer_code']).code}` : link;
    try {
      await sender.send({ id: row.id, to: row.to_address, ...rendered, linkOrCode });
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      const giveUp = context.job.attempts >= MAX_ATTEMPTS;
      await updateMessage(deps.db, row.id, { attempts: row.attempts + 1, last_error: message.slice(0, 500), status: giveUp ? 'failed' : 'queued' });
      if (giveUp) return;
      throw error;
    }
    await transact(deps.db, async (trx) => {
      await updateMessage(trx, row.id, { attempts: row.attempts + 1, last_error: null, status: 'sent', sent_at: deps.clock.now() });
      await context.finishIn(trx);
    });
  };
}
