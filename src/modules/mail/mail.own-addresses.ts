import type { Db } from '../../store/db.ts';

// Whose addresses a merchant's test-mode mail may go to by SMTP (docs/email.md, "Transport"): the
// team module knows them, and it sends mail itself (invitations), so it cannot be imported here
// without the two modules using each other. Its lookup is handed in where the modules are wired
// (src/modules/index.ts), as event subscribers are.

/** Each merchant's own addresses, lower-cased: its account's email and its current team members'. */
export type OwnAddressLookup = (db: Db, userIds: string[]) => Promise<Map<string, Set<string>>>;

let lookup: OwnAddressLookup | null = null;

export function setOwnAddressLookup(own: OwnAddressLookup): void {
  lookup = own;
}

export function ownAddressesOf(db: Db, userIds: string[]): Promise<Map<string, Set<string>>> {
  if (!lookup) throw new Error('no own-address lookup is wired: import src/modules/index.ts before sending mail');
  return lookup(db, userIds);
}
