import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import MailComposer from 'nodemailer/lib/mail-composer';
import type Mail from 'nodemailer/lib/mailer';
import { simpleParser } from 'mailparser';
import { composeMessage, type MessageParts } from './mime.ts';
import { renderMail, TEMPLATE_NAMES, type TemplateData } from './mail.templates.ts';
import { mailSamples } from '../../../test/support/mail-samples.ts';

// composeMessage writes what nodemailer's build() streams: the same bytes, for any text.

const built = (message: MessageParts) => new MailComposer(message as Mail.Options).compile().build();

const at = new Date('2027-03-03T10:00:00.000Z');

/** Text that takes each transfer encoding: plain ASCII (7bit), long lines, te reo Māori, emoji, trailing spaces, bare CR/LF. */
const bodyText = fc.oneof(
  fc.string({ maxLength: 300 }),
  fc.string({ unit: 'grapheme', maxLength: 300 }),
  fc
    .array(
      fc.oneof(
        fc.constantFrom('Kōwhai ', 'ā', '🙂', ' ', '\t', '\n', '\r\n', '\r', '=', '.', 'x'.repeat(80), '<b>', '&amp;'),
        fc.string({ maxLength: 20 }),
      ),
      { maxLength: 60 },
    )
    .map((parts) => parts.join('')),
);
const message = fc
  .record({
    from: fc.constantFrom(
      'Tono <no-reply@tono.example>',
      'no-reply@tono.example',
      '"Kōwhai Coffee" <hello@kōwhai.example>',
    ),
    to: fc.constantFrom('payer@example.com', 'Pāora <paora@example.com>'),
    subject: fc.oneof(fc.string({ maxLength: 120 }), fc.string({ unit: 'grapheme', maxLength: 120 })),
    text: bodyText,
    html: bodyText,
    id: fc.stringMatching(/^mail_[0-9A-Z]{26}$/),
  })
  .map(
    ({ id, ...parts }): MessageParts => ({
      ...parts,
      messageId: `<${id}@pay.example>`,
      baseBoundary: id.replace(/[^0-9A-Za-z]/g, ''),
      date: at,
    }),
  );

test('a composed message is byte for byte what nodemailer builds with its streams', async () => {
  await fc.assert(
    fc.asyncProperty(message, async (parts) => {
      assert.equal(composeMessage(parts).toString('latin1'), (await built(parts)).toString('latin1'));
    }),
    { numRuns: 400 },
  );
});

test('text ending in spaces and tabs after a wrapped line is broken where nodemailer breaks it', async () => {
  // nodemailer wraps the text before its trailing whitespace first (a case the property found).
  for (const text of [`${'x'.repeat(80)}Kōwhai Kōwhai Kōwhai Kōwhai \t`, `${'x'.repeat(70)} \t \t`, ' \t']) {
    const parts: MessageParts = {
      from: 'Tono <no-reply@tono.example>',
      to: 'payer@example.com',
      subject: '',
      text,
      html: '',
      messageId: '<mail_1@pay.example>',
      baseBoundary: 'mail1',
      date: at,
    };
    assert.equal(
      composeMessage(parts).toString('latin1'),
      (await built(parts)).toString('latin1'),
      JSON.stringify(text),
    );
  }
});

// The other branches of two templates: a failed charge with no retry left, a plan that completed.
const samples = {
  ...mailSamples,
  charge_failed: { ...mailSamples.charge_failed, retry: null, test: true },
  subscription_ended: { ...mailSamples.subscription_ended, how: 'completed', by: null },
} satisfies TemplateData;

test('every template composes to what nodemailer builds, and reads back as what was rendered', async () => {
  for (const name of TEMPLATE_NAMES) {
    const rendered = renderMail(name, samples[name] as never, 'https://pay.example/customer');
    const parts: MessageParts = {
      from: 'Tono <no-reply@pay.example>',
      to: 'payer@example.com',
      ...rendered,
      messageId: '<mail_1@pay.example>',
      baseBoundary: 'mail1',
      date: at,
    };
    const raw = composeMessage(parts);
    assert.ok(raw.equals(await built(parts)), name);
    const parsed = await simpleParser(raw);
    assert.equal(parsed.subject, rendered.subject, name);
    assert.equal(parsed.text, rendered.text, name);
    assert.equal(parsed.html, rendered.html, name);
    assert.equal(parsed.messageId, '<mail_1@pay.example>', name);
    assert.equal(parsed.date?.toISOString(), at.toISOString(), name);
  }
});

test('anything but string parts is refused rather than written wrong', () => {
  assert.throws(
    () => composeMessage({ to: 'p@example.com', text: 'x', html: Buffer.from('<p>x</p>') as unknown as string }),
    /string parts only/,
  );
});
