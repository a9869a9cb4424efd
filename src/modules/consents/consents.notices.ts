import type { Db } from '../../store/db.ts';
import { queueMail } from '../mail/mail.service.ts';
import { merchantContact } from '../merchants/merchants.service.ts';
import type { ConsentRow } from './consents.repo.ts';
import { limitsOf } from './consents.rules.ts';
import { describeLimits } from './limits.ts';

// What the payer hears about a recurring consent, queued in the transaction of the change.

export async function noticeConsentAuthorised(trx: Db, consent: ConsentRow, zone: string, now: number): Promise<void> {
  const merchant = await merchantContact(trx, consent.user_id);
  await queueMail(
    trx,
    {
      to: consent.email,
      template: 'consent_authorised',
      data: {
        merchant: merchant.name,
        title: consent.description,
        limits: describeLimits(limitsOf(consent), zone),
        test: consent.mode === 'test',
      },
      related: { type: 'recurring_consent', id: consent.id },
      owner: { userId: consent.user_id, mode: consent.mode },
      dedupeKey: `consent_authorised:${consent.id}`,
    },
    now,
  );
}

export async function noticeConsentRevoked(
  trx: Db,
  consent: ConsentRow,
  by: 'merchant' | 'payer' | 'bank',
  now: number,
): Promise<void> {
  const merchant = await merchantContact(trx, consent.user_id);
  const byWords = by === 'payer' ? 'you' : by === 'bank' ? 'your bank' : merchant.name;
  await queueMail(
    trx,
    {
      to: consent.email,
      template: 'consent_revoked',
      data: { merchant: merchant.name, title: consent.description, by: byWords, test: consent.mode === 'test' },
      related: { type: 'recurring_consent', id: consent.id },
      owner: { userId: consent.user_id, mode: consent.mode },
      dedupeKey: `consent_revoked:${consent.id}`,
    },
    now,
  );
}
