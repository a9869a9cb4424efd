import { payerMessagesAbout, resendPayerMessage } from '../../mail/mail.service.ts';
import { text } from '../dashboard.format.ts';
import type { Kit, Scope, Signed } from '../dashboard.kit.ts';

// What Tono told a payer about a consent, a subscription or a refund, on that object's page, and
// sending one of those messages again (a payer who lost it, or whose mailbox was full) for the
// members who answer payers (the `emails.resend` permission, docs/email.md).

const hidden = { schema: { hide: true } };

/** Where each kind of object's page is, below the mode's base. */
const PAGE_OF: Readonly<Record<string, string>> = {
  recurring_consent: 'recurring-consents',
  subscription: 'subscriptions',
  refund: 'refunds',
  payment: 'payments',
};

const NOTICES: Readonly<Record<string, string>> = {
  sent: 'The email is queued to be sent again.',
  recent: 'That email was sent again less than a minute ago, so it was not queued once more.',
};

/** The messages about one object, for its page, with what a resend just did (`?emailed=`). */
export async function payerEmailsOf(
  signed: Signed,
  related: { type: string; id: string },
  query: Record<string, unknown>,
) {
  return {
    messages: await payerMessagesAbout(signed.ctx, related),
    notice: NOTICES[text(query.emailed, 10)] ?? null,
  };
}

export function registerPayerEmailPages(scope: Scope, kit: Kit): void {
  scope.post(
    '/dashboard/:mode/emails/:id/resend',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const { id, related } = await resendPayerMessage(signed.ctx, request.params.id);
        const page = related ? PAGE_OF[related.type] : undefined;
        const emailed = id ? 'sent' : 'recent';
        if (!page || !related)
          return kit.message(reply, 200, 'Email sent again', NOTICES[emailed] as string, signed, null);
        return reply.redirect(
          `${signed.base}/${page}/${encodeURIComponent(related.id)}?emailed=${emailed}#emails`,
          303,
        );
      },
      { permission: 'emails.resend', post: true },
    ),
  );
}
