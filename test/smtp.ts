import type { TestContext } from 'node:test';
import { SMTPServer } from 'smtp-server';
import { simpleParser } from 'mailparser';

// A real SMTP receiver for tests: every message Tono sends, parsed.

/** `from` and `to` are the envelope's (MAIL FROM and RCPT TO). */
export type ReceivedMail = {
  messageId: string;
  from: string;
  to: string;
  subject: string;
  text: string;
  html: string;
  raw: string;
};

export type SmtpReceiver = {
  url: string;
  messages: ReceivedMail[];
  /** Refuse the next `n` messages with a 451 (a server that is briefly unwell). */
  refuseNext(n: number): void;
  /** Resolves with the first message (from now on or already here) that matches. */
  waitFor(match: (mail: ReceivedMail) => boolean, timeoutMs?: number): Promise<ReceivedMail>;
};

export async function smtpReceiver(t: TestContext): Promise<SmtpReceiver> {
  const messages: ReceivedMail[] = [];
  const waiters: Array<() => void> = [];
  let refuse = 0;
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    // Tono keeps its pooled connections open between messages; at the end of a test they are cut
    // rather than waited on for the default 30 s.
    closeTimeout: 500,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', async () => {
        if (refuse > 0) {
          refuse--;
          const error = Object.assign(new Error('try again later'), { responseCode: 451 });
          return callback(error);
        }
        const raw = Buffer.concat(chunks).toString('utf8');
        const parsed = await simpleParser(raw);
        messages.push({
          messageId: parsed.messageId ?? '',
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address).join(','),
          subject: parsed.subject ?? '',
          text: parsed.text ?? '',
          html: typeof parsed.html === 'string' ? parsed.html : '',
          raw,
        });
        for (const wake of waiters.splice(0)) wake();
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const port = (server.server.address() as { port: number }).port;
  return {
    url: `smtp://127.0.0.1:${port}`,
    messages,
    refuseNext: (n) => (refuse = n),
    async waitFor(match, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = messages.find(match);
        if (found) return found;
        if (Date.now() > deadline)
          throw new Error(
            `no matching mail within ${timeoutMs} ms; got: ${messages.map((m) => `${m.to} "${m.subject}"`).join('; ')}`,
          );
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 100);
        });
      }
    },
  };
}
