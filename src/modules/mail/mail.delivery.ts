import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import nodemailer, { type Transporter } from 'nodemailer';
import { composeMessage, type MessageParts } from './mime.ts';

// What puts a message on its way: an SMTP relay, or a .eml file without one.

export type DeliverySettings = { smtpUrl: string | null; dataDir: string; mailFrom: string; publicBaseUrl: string };

export type OutgoingMail = { id: string; to: string; subject: string; text: string; html: string };

/** Delivers one message; returns the file it was written to when there is no SMTP relay. */
export type MailDelivery = { deliver(mail: OutgoingMail): Promise<string | null>; close(): void };

const writeFile = promisify(fs.writeFile);
const rename = promisify(fs.rename);

/** Connections to the SMTP relay at most, shared by every message this process sends. */
const SMTP_CONNECTIONS = 4;

export function createMailDelivery(settings: DeliverySettings): MailDelivery {
  const domain = new URL(settings.publicBaseUrl).hostname || 'tono.invalid';
  const message = (mail: OutgoingMail): MessageParts => ({
    from: settings.mailFrom,
    to: mail.to,
    subject: mail.subject,
    text: mail.text,
    html: mail.html,
    messageId: `<${mail.id}@${domain}>`,
    // The parts' boundary from the message's id, not random bytes: unique all the same, and a
    // retry of the same message is the same bytes.
    baseBoundary: mail.id.replace(/[^0-9A-Za-z]/g, ''),
  });
  if (settings.smtpUrl) {
    // Pooled: many messages go at once, and a connection per message would make the relay see a
    // new client (and a TLS handshake) for each.
    const transport: Transporter = nodemailer.createTransport({ url: settings.smtpUrl, pool: true, maxConnections: SMTP_CONNECTIONS });
    return {
      async deliver(mail) {
        // Composed here (mime.ts), so the transport only streams the finished bytes.
        await transport.sendMail({ envelope: { from: settings.mailFrom, to: mail.to }, raw: composeMessage(message(mail)) });
        return null;
      },
      close: () => transport.close(),
    };
  }
  const folder = path.join(settings.dataDir, 'mail');
  return {
    async deliver(mail) {
      const raw = composeMessage(message(mail));
      const file = path.join(folder, `${mail.id}.eml`);
      // Written whole then renamed: a crash never leaves half a message behind. On the thread pool:
      // creating a file in a folder of thousands held the event loop for a sixth of a charge's time,
      // and API calls waited behind it. The folder is made when a write finds it missing. Callback
      // calls rather than fs.promises: its FileHandle for each file cost the event loop twice as
      // much (37–54 against 21–28 µs a message, measured with 256 writes under way).
      await writeFile(`${file}.tmp`, raw).catch(async (error: NodeJS.ErrnoException) => {
        if (error.code !== 'ENOENT') throw error;
        await fs.promises.mkdir(folder, { recursive: true });
        await writeFile(`${file}.tmp`, raw);
      });
      await rename(`${file}.tmp`, file);
      return file;
    },
    close: () => {},
  };
}
