import { payerMessagesAbout, resendPayerMessage } from '../../mail/mail.service.ts';
import { formOf } from '../dashboard.kit.ts';
import { text } from '../dashboard.format.ts';
import type { Kit, Scope, Signed } from '../dashboard.kit.ts';

// What Tono told a payer about a payment (its receipt), a consent, a subscription or a refund (its
// credit note), on that object's page, and sending one of those messages again (a payer who lost
// it, or whose mailbox was full) for the members who answer payers (the `emails.resend`
// permission, docs/email.md).

const hidden = { schema: { hide: true } };

/** Where each kind of object's page is, below the mode's base: where a resend goes back to. */
const PAGE_OF: Readonly<Record<string, string>> = {
  payment: 'payments',
  refund: 'refunds',
  recurring_consent: 'recurring-consents',
  subscription: 'subscriptions',
};
const BACK = /^(payments|refunds|recurring-consents|subscriptions)\/[A-Za-z0-9_]{1,64}$/;

const NOTICES: Readonly<Record<string, string>> = {
  sent: 'The email is queued to be sent again.',
  recent: 'That email was sent again less than a minute ago, so it was not queued once more.',
};

/**
 * The messages about an object (and what goes with it: a payment's receipt, a refund's credit
 * note), for its page, with what a resend just did (`?emailed=`).
 */
export async function payerEmailsOf(
  signed: Signed,
  query: Record<string, unknown>,
  object: { type: keyof typeof PAGE_OF & string; id: string },
  withIt: ReadonlyArray<{ type: string; id: string }> = [],
) {
  return {
    messages: await payerMessagesAbout(signed.ctx, [object, ...withIt]),
    notice: NOTICES[text(query.emailed, 10)] ?? null,
    back: `${PAGE_OF[object.type]}/${object.id}`,
  };
}

export function registerPayerEmailPages(scope: Scope, kit: Kit): void {
  scope.post(
    '/dashboard/:mode/emails/:id/resend',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const { id } = await resendPayerMessage(signed.ctx, request.params.id);
        const emailed = id ? 'sent' : 'recent';
        const back = text(formOf(request).back, 100);
        if (!BACK.test(back))
          return kit.message(reply, 200, 'Email sent again', NOTICES[emailed] as string, signed, null);
        return reply.redirect(`${signed.base}/${back}?emailed=${emailed}#emails`, 303);
      },
      { permission: 'emails.resend', post: true },
    ),
  );
}
