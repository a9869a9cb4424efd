import { hashPassword, randomSecret } from '../../shared/crypto.ts';
import { systemClock } from '../../shared/time.ts';
import { transact } from '../../store/store.ts';
import { endSessionsOfMember, setPasswordLinkFor } from '../../modules/dashboard/dashboard.sessions.ts';
import { findMerchantByEmail, hashNewPassword, merchantById } from '../../modules/merchants/merchants.service.ts';
import { createOwnerByOperator, normaliseMemberEmail } from '../../modules/team/team.service.ts';
import type { CliCommand } from '../command.ts';
import { operator, print, withDb } from './open.ts';
import { readStdin } from './merchants.ts';
import { memberByEmail, resetTwoFactorByOperator } from '../../modules/dashboard/dashboard.two-factor.ts';

// The operator's way into a merchant's team (docs/team.md): the first owner of a merchant, or a way
// back in when every owner is locked out.

export const memberCommands: Record<string, CliCommand> = {
  'member create-owner': {
    usage: '--merchant user_…|EMAIL --email E [--password P | --password-stdin] [--json]',
    options: {
      merchant: { type: 'string' },
      email: { type: 'string' },
      password: { type: 'string' },
      'password-stdin': { type: 'boolean' },
      json: { type: 'boolean' },
    },
    async run(config, o) {
      if (!o.merchant || !o.email) throw new Error('member create-owner needs --merchant and --email');
      const email = normaliseMemberEmail(o.email);
      if (!email) throw new Error(`--email must be an email address, not ${o.email}`);
      // Read from stdin rather than an argument, which other users of the machine can see in the process list.
      const given = o['password-stdin'] ? (await readStdin()).replace(/\r?\n$/, '') : (o.password ?? null);
      // Without a password the member gets one nobody knows, and a one-time link to choose their own.
      const passwordHash = given === null ? await hashPassword(randomSecret(32)) : await hashNewPassword(given);
      const done = await withDb(config, async (db) => {
        const userId = o.merchant.startsWith('user_') ? o.merchant : (await findMerchantByEmail(db, o.merchant))?.id;
        if (!userId || !(await merchantById(db, userId))) throw new Error(`no merchant ${o.merchant}`);
        const now = systemClock.now();
        return transact(db, async (trx) => {
          const member = await createOwnerByOperator(trx, { userId, email, passwordHash, now }, operator());
          // A member made owner from an existing one starts again: their old sessions end.
          if (!member.created) await endSessionsOfMember(trx, now, member.id);
          const link = given === null ? await setPasswordLinkFor(trx, member, now, config.publicBaseUrl) : null;
          return { member, link };
        });
      });
      const shown = {
        member_id: done.member.id,
        merchant_id: done.member.userId,
        email: done.member.email,
        role: done.member.role,
        created: done.member.created,
        ...(done.link ? { set_password_link: done.link } : {}),
      };
      print(
        shown,
        o.json,
        [
          `member        ${done.member.id} (${done.member.created ? 'new owner' : 'made owner'})`,
          `merchant      ${done.member.userId}`,
          `dashboard     ${done.member.email} / ${done.link ? `choose a password at ${done.link} (works once, for 30 minutes)` : '(the password you gave)'}`,
        ].join('\n'),
      );
      return 0;
    },
  },
  'member reset-2fa': {
    usage: '--email E [--json]',
    options: { email: { type: 'string' }, json: { type: 'boolean' } },
    // Operator recovery for a member who lost both their authenticator and their recovery codes:
    // they log in with their password alone afterwards (or set it up again, if their team requires it).
    async run(config, o) {
      if (!o.email) throw new Error('member reset-2fa needs --email');
      const done = await withDb(config, async (db) => {
        const member = await memberByEmail(db, o.email);
        if (!member) throw new Error(`no member with email ${o.email}`);
        return { member, had: await resetTwoFactorByOperator(db, member, systemClock.now(), operator()) };
      });
      print(
        { member_id: done.member.memberId, two_factor_removed: done.had, sessions_ended: true },
        o.json,
        done.had
          ? `two-factor sign-in removed for ${done.member.memberId}; its dashboard sessions are ended`
          : `${done.member.memberId} had no two-factor sign-in; its dashboard sessions are ended`,
      );
      return 0;
    },
  },
};
