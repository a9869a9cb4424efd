import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { createRequire } from 'node:module';
import type Nodemailer from 'nodemailer';
import type { Transporter } from 'nodemailer';
import type { Mode } from '../../shared/mode.ts';
import { composeMessage, type MessageParts } from './mime.ts';

// What puts a message on its way: an SMTP relay, or a .eml file without one. A merchant's test-mode
// message goes by SMTP only to the merchant's own people; to anyone else it is a file even when
// there is a relay (onlyToFile).

/**
 * The .eml files of one merchant's test mode (all of it without SMTP; with SMTP, what was not to the
 * merchant's own people) that are kept: the newest 200, the older ones
 * deleted as each new one is written. A test clock moved years ahead sends a receipt per charge,
 * and a test key must not be able to fill the disk; 200 is far more than a person reads through
 * while trying a flow. Live mail is never deleted: it is what a payer was owed, and its volume is
 * bounded by real payments.
 */
export const TEST_MAIL_KEPT = 200;

export type DeliverySettings = {
  smtpUrl: string | null;
  dataDir: string;
  mailFrom: string;
  publicBaseUrl: string;
  /** TEST_MAIL_KEPT unless given; tests set a few, to see the pruning without writing hundreds of files. */
  testMailKept?: number;
};

/** Whose message it is; null when it concerns no merchant (a payer's sign-in code, a password reset). */
export type MailOwner = { userId: string; mode: Mode };

export type OutgoingMail = {
  id: string;
  to: string;
  subject: string;
  text: string;
  html: string;
  owner?: MailOwner | null;
  /**
   * Whether `to` is one of its merchant's own addresses (the account's email or a live team
   * member's), as the lane found when it loaded the message. Only a test-mode message asks; unless
   * this is true, it is written to the merchant's test folder rather than sent.
   */
  toOwnAddress?: boolean;
};

/**
 * Whether a message is written to a file even with an SMTP relay: a merchant's test-mode message to
 * anyone but the merchant's own people. Test mode emails no one else, as Stripe's does not: a test
 * key would otherwise have the operator's relay, from the operator's address, send whatever the
 * key's holder put in a subject to any address, as often as a test clock makes charges.
 */
export function onlyToFile(mail: Pick<OutgoingMail, 'owner' | 'toOwnAddress'>): boolean {
  return mail.owner?.mode === 'test' && mail.toOwnAddress !== true;
}

/** Delivers one message; returns the file it was written to, or null when SMTP took it. */
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
  const toFile = fileWriter(settings, message);
  if (settings.smtpUrl) {
    // Pooled: many messages go at once, and a connection per message would make the relay see a
    // new client (and a TLS handshake) for each.
    // Loaded only with a relay: without one (npm start's default, most tests) nothing needs SMTP.
    const nodemailer = createRequire(import.meta.url)('nodemailer') as typeof Nodemailer;
    const transport: Transporter = nodemailer.createTransport({
      url: settings.smtpUrl,
      pool: true,
      maxConnections: SMTP_CONNECTIONS,
    });
    return {
      async deliver(mail) {
        if (onlyToFile(mail)) return toFile(mail);
        // Composed here (mime.ts), so the transport only streams the finished bytes.
        await transport.sendMail({
          envelope: { from: settings.mailFrom, to: mail.to },
          raw: composeMessage(message(mail)),
        });
        return null;
      },
      close: () => transport.close(),
    };
  }
  return { deliver: toFile, close: () => {} };
}

/** Writes a message to its .eml file (folderOf), pruning a merchant's test folder; returns the file. */
function fileWriter(
  settings: DeliverySettings,
  message: (mail: OutgoingMail) => MessageParts,
): (mail: OutgoingMail) => Promise<string> {
  const root = path.join(settings.dataDir, 'mail');
  const pruneSoon = folderPruner(settings.testMailKept ?? TEST_MAIL_KEPT);
  return async (mail) => {
    const raw = composeMessage(message(mail));
    const folder = folderOf(root, mail.owner);
    const file = path.join(folder, `${mail.id}.eml`);
    // Written whole then renamed: a crash never leaves half a message behind. On the thread pool:
    // creating a file in a folder of thousands held the event loop for a sixth of a charge's time,
    // and API calls waited behind it. The folder is made when a write finds it missing. Callback
    // calls rather than fs.promises: its FileHandle for each file cost the event loop twice as
    // much (37–54 against 21–28 µs a message, measured with 256 writes under way).
    // Owner-only (the folders 0700, the files 0600): a message may hold a sign-in code.
    await writeFile(`${file}.tmp`, raw, { mode: 0o600 }).catch(async (error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error;
      await fs.promises.mkdir(folder, { recursive: true, mode: 0o700 });
      await writeFile(`${file}.tmp`, raw, { mode: 0o600 });
    });
    await rename(`${file}.tmp`, file);
    // Awaited, so a message is recorded sent only once its merchant's folder is back within
    // bounds; a failure here fails the send, whose retry writes the same bytes and prunes again.
    if (folder !== root) await pruneSoon(folder);
    return file;
  };
}

const SAFE_NAME = /^[A-Za-z0-9_-]{1,100}$/;

/**
 * DATA_DIR/mail/test/<user id>/ for a merchant's test mode, so pruning lists only that merchant's
 * files; DATA_DIR/mail/ for live mail and for a message whose merchant is not known, which are
 * never pruned: a message that cannot be told to be test mail is kept rather than risk deleting
 * something a payer was owed.
 */
function folderOf(root: string, owner: MailOwner | null | undefined): string {
  return owner?.mode === 'test' && SAFE_NAME.test(owner.userId) ? path.join(root, 'test', owner.userId) : root;
}

const readdir = promisify(fs.readdir);
const unlink = promisify(fs.unlink);

/**
 * Prunes a folder to its newest `kept` messages, in a pass that lists the folder after the call:
 * many messages written at once share one pass rather than each listing the folder.
 */
function folderPruner(kept: number): (folder: string) => Promise<void> {
  // Per folder, a pass that has not listed it yet (a message written meanwhile joins it), and the
  // last pass queued (passes of one folder run one after another).
  const waitingPass = new Map<string, Promise<void>>();
  const lastPass = new Map<string, Promise<void>>();
  return (folder) => {
    const waiting = waitingPass.get(folder);
    if (waiting) return waiting;
    const pass = (lastPass.get(folder) ?? Promise.resolve()).then(() => {
      waitingPass.delete(folder);
      return prune(folder, kept);
    });
    waitingPass.set(folder, pass);
    const settled = pass.catch(() => {});
    lastPass.set(folder, settled);
    void settled.then(() => {
      if (lastPass.get(folder) === settled) lastPass.delete(folder);
    });
    return pass;
  };
}

async function prune(folder: string, kept: number): Promise<void> {
  // Ids are ULIDs: their names sort by when the message was queued, oldest first.
  const names = (await readdir(folder)).filter((name) => name.endsWith('.eml')).sort();
  for (const name of names.slice(0, Math.max(0, names.length - kept))) {
    await unlink(path.join(folder, name)).catch((error: NodeJS.ErrnoException) => {
      // another process pruning the same folder took it first
      if (error.code !== 'ENOENT') throw error;
    });
  }
}
