import { inJsonArray, type Db } from '../../store/db.ts';
import { prepared } from '../../store/prepared.ts';

// The team members' addresses, many merchants at a time: part of a merchant's own addresses, to
// which its test-mode mail may go by SMTP (docs/email.md, "Transport"; merchants.accounts.ts).

const memberEmailsQuery = prepared<{ ids: string }, { user_id: string; email: string }>((db, arg) =>
  db
    .selectFrom('members')
    .select(['user_id', 'email'])
    .where(inJsonArray(db, 'user_id', arg('ids')))
    .where('removed_at', 'is', null),
);

/** The emails of the merchants' current members (not removed), with their merchant. */
export function memberEmailsOf(db: Db, userIds: string[]): Promise<Array<{ user_id: string; email: string }>> {
  if (userIds.length === 0) return Promise.resolve([]);
  return memberEmailsQuery.all(db, { ids: JSON.stringify(userIds) });
}
