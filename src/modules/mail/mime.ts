import MailComposer from 'nodemailer/lib/mail-composer';
import type Mail from 'nodemailer/lib/mailer';
import type MimeNode from 'nodemailer/lib/mime-node';
import * as base64 from 'nodemailer/lib/base64';
import * as qp from 'nodemailer/lib/qp';

// A message's bytes, written in one pass. nodemailer's own build() streams every part through an
// encoder joined by pipeline(), and for a 2 kB receipt those streams (with the AbortController
// and DOMException each pipeline makes) cost twice what the message itself does: about 300 µs of
// CPU against about 100 µs here, for what was the biggest part of a subscription charge with its
// receipt (docs/performance.md, A subscription charge). nodemailer still decides everything:
// MailComposer makes the tree, each node writes its own headers (encoded words, folding,
// addresses) and picks its transfer encoding; only the string parts are encoded here, with
// nodemailer's own quoted-printable and base64 encoders, which give the same bytes as its stream
// encoders. mime.test.ts holds the output byte for byte to build()'s.

/** What Tono sends: string parts only (no attachments, streams, files or URLs). */
export type MessageParts = Pick<Mail.Options, 'from' | 'to' | 'subject' | 'messageId' | 'date'> & {
  text: string;
  html: string;
  /** The parts' boundaries are made from it rather than from random bytes (MailComposer's option). */
  baseBoundary?: string;
};

const LINE_LENGTH = 76;

export function composeMessage(message: MessageParts): Buffer {
  const composed = writeNode(new MailComposer(message as Mail.Options).compile());
  // build() ends every message with a line break.
  return Buffer.from(
    composed.endsWith('\n') ? composed : composed.endsWith('\r') ? `${composed}\n` : `${composed}\r\n`,
    'utf8',
  );
}

/**
 * Quoted-printable, wrapped as nodemailer's stream encoder wraps it: that encoder holds back the
 * spaces and tabs the text ends with until it knows what follows them, so it wraps the text before
 * them first and then its last line again with them; wrapping the whole at once can break that
 * last line elsewhere.
 */
function quotedPrintable(content: string): string {
  let end = content.length;
  while (end > 0 && (content[end - 1] === ' ' || content[end - 1] === '\t')) end--;
  const wrapped = qp.wrap(qp.encode(content.slice(0, end)), LINE_LENGTH);
  if (end === content.length) return wrapped;
  const lastLine = wrapped.lastIndexOf('\n') + 1;
  return wrapped.slice(0, lastLine) + qp.wrap(wrapped.slice(lastLine) + qp.encode(content.slice(end)), LINE_LENGTH);
}

function writeNode(node: MimeNode): string {
  let out = `${node.buildHeaders()}\r\n\r\n`;
  const content = node.content;
  if (content !== undefined && content !== '') {
    if (typeof content !== 'string') throw new TypeError('composeMessage writes string parts only');
    // The encoding buildHeaders() chose and wrote (asking getTransferEncoding() again would scan the text again).
    const encoding = String(node.getHeader('Content-Transfer-Encoding') ?? '').toLowerCase();
    out +=
      encoding === 'quoted-printable'
        ? quotedPrintable(content)
        : encoding === 'base64'
          ? base64.wrap(base64.encode(content), LINE_LENGTH)
          : content;
  }
  if (node.multipart) {
    node.childNodes.forEach((child, i) => {
      out += `${i > 0 ? '\r\n' : ''}--${node.boundary}\r\n${writeNode(child)}`;
    });
    out += `\r\n--${node.boundary}--\r\n`;
  }
  return out;
}
