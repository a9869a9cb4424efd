import type { Kysely, Transaction } from 'kysely';
import type { Database } from './tables.ts';
import { transaction } from './db.ts';

// Work that must only happen once a transaction has committed (waking the job worker, say).
// A hook added twice in one transaction runs once.
const afterCommitHooks = new WeakMap<object, Set<() => void>>();

export function afterCommit(db: Kysely<Database>, hook: () => void): void {
  const hooks = afterCommitHooks.get(db);
  if (hooks) hooks.add(hook);
  else queueMicrotask(hook);
}

export async function transact<T>(db: Kysely<Database>, work: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
  if (db.isTransaction) return work(db as Transaction<Database>);
  let hooks = new Set<() => void>();
  const result = await transaction(db, async (trx) => {
    hooks = new Set();
    afterCommitHooks.set(trx, hooks);
    return work(trx);
  });
  for (const hook of hooks) hook();
  return result;
}
