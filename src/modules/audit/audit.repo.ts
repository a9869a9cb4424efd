import { sql, type Insertable, type Kysely, type Selectable } from 'kysely';
import type { Database } from '../../store/tables.ts';
import { engineOf } from '../../store/db.ts';
import { insertLater, insertRow, prepared } from '../../store/prepared.ts';
import { storeOf, storeOfOrNull, type BatchAppender } from '../../store/store.ts';
import type { Mode } from '../../shared/mode.ts';
import { chainHash, chainHashAt, GENESIS_HASH, type ChainedFields } from './audit.chain.ts';
import type { AuditEventsTable, AuditHeadsTable, AuditPendingTable } from './audit.tables.ts';

export type AuditRow = Selectable<AuditEventsTable>;
export type AuditHeadRow = Selectable<AuditHeadsTable>;
type Db = Kysely<Database>;

/** A record as the caller gives it; the chain (seq, prev_hash, hash) is added where it is written. */
export type UnchainedRecord = Omit<ChainedFields, 'seq'>;

const headOnSqlite = prepared<{ user_id: string }, AuditHeadRow>((db, arg) =>
  db.selectFrom('audit_heads').selectAll().where('user_id', '=', arg('user_id')),
);
const moveHeadOnSqlite = prepared<AuditHeadRow>((db, arg) =>
  db
    .insertInto('audit_heads')
    .values({ user_id: arg('user_id'), seq: arg('seq'), prev_hash: arg('prev_hash'), hash: arg('hash') })
    .onConflict((c) =>
      c.column('user_id').doUpdateSet({ seq: arg('seq'), prev_hash: arg('prev_hash'), hash: arg('hash') }),
    ),
);

const COLUMNS = [
  'id',
  'user_id',
  'seq',
  'at',
  'mode',
  'actor_kind',
  'actor_id',
  'action',
  'object_id',
  'ip',
  'user_agent',
  'request_id',
  'summary',
  'prev_hash',
  'hash',
] as const satisfies ReadonlyArray<keyof AuditEventsTable>;
/** Rows a multi-row insert takes at most (SQLite binds at most 32,766 values a statement). */
const ROWS_AN_INSERT = 32;
const ROW_PLACEHOLDERS = `(${COLUMNS.map(() => '?').join(', ')})`;
/** The insert of n rows, at [n]: made once, so a flush neither builds nor hashes a long text. */
const INSERT_ROWS = Array.from(
  { length: ROWS_AN_INSERT + 1 },
  (_, n) => `insert into audit_events (${COLUMNS.join(', ')}) values ${Array(n).fill(ROW_PLACEHOLDERS).join(', ')}`,
);

/**
 * SQLite: the records of a batch of transactions, chained and written together just before the
 * batch's COMMIT (src/store/sqlite/group-commit.ts, BatchAppender): each merchant's head read
 * once, its records numbered and hashed in the order their transactions committed, inserted a
 * few dozen a statement, and the head moved once. Outside any transaction's savepoint, so SQLite
 * journals none of these pages per transaction; in the batch's transaction, so a record is kept
 * exactly when its change is.
 */
const appendAtCommitOnSqlite: BatchAppender<UnchainedRecord> = {
  name: 'audit_events',
  flush(statements, records) {
    const byMerchant = new Map<string, UnchainedRecord[]>();
    for (const record of records) {
      const own = byMerchant.get(record.user_id);
      if (own) own.push(record);
      else byMerchant.set(record.user_id, [record]);
    }
    for (const [userId, own] of byMerchant) {
      const [head] = statements.all('select seq, hash from audit_heads where user_id = ?', [userId]);
      let seq = Number(head?.seq ?? 0);
      let hash: string = head?.hash ?? GENESIS_HASH;
      // Each record's values in COLUMNS' order, numbered and hashed as they are laid out.
      const values: unknown[] = [];
      let prevHash = hash;
      for (const record of own) {
        seq += 1;
        prevHash = hash;
        hash = chainHashAt(prevHash, record, seq);
        const chained = { seq, prev_hash: prevHash, hash };
        for (const column of COLUMNS)
          values.push(
            column in chained ? chained[column as keyof typeof chained] : record[column as keyof UnchainedRecord],
          );
      }
      for (let at = 0; at < own.length; at += ROWS_AN_INSERT) {
        const rows = Math.min(ROWS_AN_INSERT, own.length - at);
        statements.run(INSERT_ROWS[rows]!, values.slice(at * COLUMNS.length, (at + rows) * COLUMNS.length));
      }
      statements.run(
        'insert into audit_heads (user_id, seq, prev_hash, hash) values (?, ?, ?, ?) on conflict (user_id) do update set seq = excluded.seq, prev_hash = excluded.prev_hash, hash = excluded.hash',
        [userId, seq, prevHash, hash],
      );
    }
  },
};

/**
 * Appends a record to its merchant's chain in the caller's transaction. On PostgreSQL it is written
 * unnumbered to audit_pending, without waiting for the answer, and chained after the commit
 * (chainPending). On SQLite, in one of the store's transactions, it is handed to the batch's commit
 * (appendAtCommitOnSqlite); in any other SQLite transaction, whose writers take turns and whose
 * statements cost no round trip, the head is read and moved here.
 */
export async function appendRecord(trx: Db, record: UnchainedRecord): Promise<void> {
  if (engineOf(trx) === 'postgres') {
    await insertLater(trx, 'audit_pending', record as Insertable<AuditPendingTable>);
    return;
  }
  if (storeOfOrNull(trx)?.appendAtCommit(trx, appendAtCommitOnSqlite, record)) return;
  const head = await headOnSqlite.first(trx, { user_id: record.user_id });
  const seq = Number(head?.seq ?? 0) + 1;
  const prevHash = head?.hash ?? GENESIS_HASH;
  const hash = chainHash(prevHash, { ...record, seq });
  await insertRow(trx, 'audit_events', { ...record, seq, prev_hash: prevHash, hash } as AuditEventsTable);
  await moveHeadOnSqlite.run(trx, { user_id: record.user_id, seq, prev_hash: prevHash, hash });
}

// PostgreSQL: numbering and chaining committed records (chainPending). The rows go as one JSON
// parameter each, so a statement's text does not depend on how many there are.
const insertChained = prepared<{ rows: string }>((db, arg) => {
  const columns = sql.join(COLUMNS.map((column) => sql.ref(column)));
  const query = sql`insert into audit_events (${columns})
    select ${columns} from json_populate_recordset(null::audit_events, cast(${arg('rows')} as json))`;
  return { compile: () => query.compile(db) };
});
const deleteChained = prepared<{ user_ids: string[]; numbers: number[] }>((db, arg) => {
  const query = sql`delete from audit_pending
    where (user_id, n) in (select * from unnest(cast(${arg('user_ids')} as text[]), cast(${arg('numbers')} as bigint[])))`;
  return { compile: () => query.compile(db) };
});
const moveHeads = prepared<{ heads: string }>((db, arg) => {
  const query = sql`update audit_heads h set seq = d.seq, prev_hash = d.prev_hash, hash = d.hash
    from json_populate_recordset(null::audit_heads, cast(${arg('heads')} as json)) d where h.user_id = d.user_id`;
  return { compile: () => query.compile(db) };
});
// A merchant's head exists before its records are chained, so there is always a row to lock: two
// processes chaining a merchant's first records at once then take turns at it like any others.
const headsToLock = prepared<{ user_ids: string[]; genesis: string }>((db, arg) => {
  const query = sql`insert into audit_heads (user_id, seq, prev_hash, hash)
    select user_id, 0, ${arg('genesis')}, ${arg('genesis')} from unnest(cast(${arg('user_ids')} as text[])) user_id
    on conflict (user_id) do nothing`;
  return { compile: () => query.compile(db) };
});

/** What one pass of chainPending did: records chained, and merchants left to whoever holds their head. */
export type ChainPass = { chained: number; skipped: string[] };

/**
 * PostgreSQL: numbers and chains up to `limit` committed records of these merchants into
 * audit_events, in one transaction. Their heads (made at seq 0 for a merchant's first records) are
 * locked in `user_id` order, so two processes chaining overlapping merchants wait rather than
 * deadlock; with `skipHeld`, a head another transaction holds is skipped instead (that merchant is
 * in `skipped`): its holder is chaining it. Each merchant's records are then chained from its head in
 * the order they were written (`n`), inserted, removed from audit_pending, and the head moved once.
 * A record committed while this runs is chained by the next call.
 */
export async function chainPending(
  db: Db,
  userIds: readonly string[],
  limit: number,
  options: { skipHeld?: boolean } = {},
): Promise<ChainPass> {
  const merchants = [...new Set(userIds)].sort();
  return storeOf(db).transaction(async (trx) => {
    await headsToLock.later(trx, { user_ids: merchants, genesis: GENESIS_HASH });
    const locked = await sql<AuditHeadRow>`select user_id, seq, prev_hash, hash from audit_heads
      where user_id = any(${merchants}) order by user_id for update${sql.raw(options.skipHeld ? ' skip locked' : '')}`.execute(
      trx,
    );
    const heads = new Map(locked.rows.map((head) => [head.user_id, { seq: Number(head.seq), hash: head.hash }]));
    const skipped = merchants.filter((userId) => !heads.has(userId));
    if (heads.size === 0) return { chained: 0, skipped };
    const pending = await trx
      .selectFrom('audit_pending')
      .selectAll()
      .where('user_id', 'in', [...heads.keys()])
      .orderBy('user_id')
      .orderBy('n')
      .limit(limit)
      .execute();
    if (pending.length === 0) return { chained: 0, skipped };
    const moved = new Map<string, AuditHeadRow>();
    const chained = pending.map(({ n: _, ...record }) => {
      const head = moved.get(record.user_id) ?? heads.get(record.user_id)!;
      const seq = Number(head.seq) + 1;
      const hash = chainHashAt(head.hash, record, seq);
      moved.set(record.user_id, { user_id: record.user_id, seq, prev_hash: head.hash, hash });
      return { ...record, at: Number(record.at), seq, prev_hash: head.hash, hash };
    });
    await insertChained.later(trx, { rows: JSON.stringify(chained) });
    await deleteChained.later(trx, {
      user_ids: pending.map((row) => row.user_id),
      numbers: pending.map((row) => Number(row.n)),
    });
    await moveHeads.later(trx, { heads: JSON.stringify([...moved.values()]) });
    return { chained: pending.length, skipped };
  });
}

/** PostgreSQL: merchants with records committed and not yet chained (at most `limit`). */
export async function merchantsWithPending(db: Db, limit: number): Promise<string[]> {
  const rows = await db.selectFrom('audit_pending').select('user_id').distinct().limit(limit).execute();
  return rows.map((row) => row.user_id);
}

const anyPending = prepared<{ user_id: string }, { one: number }>((db, arg) =>
  db.selectFrom('audit_pending').select(sql<number>`1`.as('one')).where('user_id', '=', arg('user_id')).limit(1),
);

/** PostgreSQL: whether the merchant has records committed and not yet chained. */
export async function hasPending(db: Db, userId: string): Promise<boolean> {
  return (await anyPending.first(db, { user_id: userId })) !== undefined;
}

/** The actors whose changes are indexed by actor: few records each, spread thin among the rest. */
const PEOPLE: readonly string[] = ['member', 'payer', 'operator'];
const PEOPLE_ONLY = sql<boolean>`actor_kind in (${sql.join(PEOPLE.map((kind) => sql.lit(kind)))})`;

export type AuditFilters = {
  actor_kind?: string;
  actor_id?: string;
  action?: string;
  object_id?: string;
  createdGte?: number;
  createdLt?: number;
  starting_after?: string;
  limit: number;
  /** With `mode`, also the records without a mode (settings, members, sign-ins); default true. */
  modeless?: boolean;
};

/** The merchant's records, newest first; with `mode`, only that mode's and (unless `modeless` is false) those without one. */
export async function listAudit(db: Db, userId: string, mode: Mode | null, filters: AuditFilters): Promise<AuditRow[]> {
  return listAuditQuery(db, userId, mode, filters).execute();
}

/** Whether the merchant has the record: a page's cursor must name one, since the trail pages by its place in the chain. */
export async function hasAuditRecord(db: Db, userId: string, id: string): Promise<boolean> {
  const found = await db
    .selectFrom('audit_events')
    .select('id')
    .where('user_id', '=', userId)
    .where('id', '=', id)
    .executeTakeFirst();
  return found !== undefined;
}

/** listAudit's query, for its plan to be read. */
export function listAuditQuery(db: Db, userId: string, mode: Mode | null, filters: AuditFilters) {
  let query = db.selectFrom('audit_events').selectAll().where('user_id', '=', userId);
  if (mode && filters.modeless === false) query = query.where('mode', '=', mode);
  else if (mode) query = query.where((eb) => eb.or([eb('mode', '=', mode), eb('mode', 'is', null)]));
  if (filters.actor_kind) query = query.where('actor_kind', '=', filters.actor_kind as any);
  if (filters.actor_id) {
    query = query.where('actor_id', '=', filters.actor_id);
    // The same text as the partial index's condition (migration 0041), which is how SQLite's
    // planner knows it may read that index; a key's or the service's records are read newest first.
    if (filters.actor_kind && PEOPLE.includes(filters.actor_kind)) query = query.where(PEOPLE_ONLY);
  }
  if (filters.action !== undefined) query = query.where('action', '=', filters.action);
  if (filters.object_id !== undefined) query = query.where('object_id', '=', filters.object_id);
  if (filters.createdGte !== undefined) query = query.where('at', '>=', filters.createdGte);
  if (filters.createdLt !== undefined) query = query.where('at', '<', filters.createdLt);
  // Newest first is the chain's order; a page starts after its cursor record's place in it.
  if (filters.starting_after) {
    const after = filters.starting_after;
    query = query.where('seq', '<', (eb) =>
      eb.selectFrom('audit_events').select('seq').where('user_id', '=', userId).where('id', '=', after),
    );
  }
  return query.orderBy('seq', 'desc').limit(filters.limit + 1);
}

/** Every merchant with a chain (a head row or any record). */
export async function merchantsWithChains(db: Db): Promise<string[]> {
  const rows = await db
    .selectFrom('audit_heads')
    .select('user_id')
    .union(db.selectFrom('audit_events').select('user_id'))
    .execute();
  return rows.map((row) => row.user_id).sort();
}

/** A page of one merchant's chain in order, from after `afterSeq`. */
export async function chainPage(db: Db, userId: string, afterSeq: number, limit: number): Promise<AuditRow[]> {
  return db
    .selectFrom('audit_events')
    .selectAll()
    .where('user_id', '=', userId)
    .where('seq', '>', afterSeq)
    .orderBy('seq')
    .orderBy('id')
    .limit(limit)
    .execute();
}

/** One merchant's head row, if it has one. */
export async function chainHead(db: Db, userId: string): Promise<AuditHeadRow | null> {
  return (await db.selectFrom('audit_heads').selectAll().where('user_id', '=', userId).executeTakeFirst()) ?? null;
}
