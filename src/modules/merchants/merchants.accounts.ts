import { inJsonArray, type Db } from '../../store/db.ts';
import { prepared } from '../../store/prepared.ts';
import { memberEmailsOf } from '../team/team.addresses.ts';

// A merchant's own addresses, many merchants at a time: its account's email and its current team
// members'. The mail module sends a merchant's test-mode mail by SMTP only to them (docs/email.md,
// "Transport"); the lookup is handed to it where the modules are wired (src/modules/index.ts).

const accountEmailsQuery = prepared<{ ids: string }, { id: string; email: string }>((db, arg) =>
  db
    .selectFrom('users')
    .select(['id', 'email'])
    .where(inJsonArray(db, 'id', arg('ids'))),
);

/** Each merchant's own addresses, lower-cased. */
export async function ownAddressesOf(db: Db, userIds: string[]): Promise<Map<string, Set<string>>> {
  const owned = new Map<string, Set<string>>(userIds.map((id) => [id, new Set<string>()]));
  if (userIds.length === 0) return owned;
  const [accounts, members] = await Promise.all([
    accountEmailsQuery.all(db, { ids: JSON.stringify(userIds) }),
    memberEmailsOf(db, userIds),
  ]);
  for (const row of accounts) owned.get(row.id)?.add(row.email.trim().toLowerCase());
  for (const row of members) owned.get(row.user_id)?.add(row.email.trim().toLowerCase());
  return owned;
}
