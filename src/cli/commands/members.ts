import { systemClock } from '../../shared/time.ts';
import { memberByEmail, resetTwoFactorByOperator } from '../../modules/dashboard/dashboard.two-factor.ts';
import type { CliCommand } from '../command.ts';
import { print, withDb } from './open.ts';

export const memberCommands: Record<string, CliCommand> = {
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
        return { member, had: await resetTwoFactorByOperator(db, member, systemClock.now()) };
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
