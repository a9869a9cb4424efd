import { sql, type Kysely, type Selectable } from 'kysely';
import type { Database } from '../../store/tables.ts';
import { engineOf } from '../../store/db.ts';
import { insertRow, prepared } from '../../store/prepared.ts';
import { storeOfOrNull, type BatchAppender } from '../../store/store.ts';
import type { Mode } from '../../shared/mode.ts';
import { canonicalParts, chainHash, chainHashAt, GENESIS_HASH, type ChainedFields } from './audit.chain.ts';
import type { AuditEventsTable, AuditHeadsTable } from './audit.tables.ts';

export type AuditRow = Selectable<AuditEventsTable>;
export type AuditHeadRow = Selectable<AuditHeadsTable>;
type Db = Kysely<Database>;

/** A record as the caller gives it; the chain (seq, prev_hash, hash) is added where it is written. */
export type UnchainedRecord = Omit<ChainedFields, 'seq'>;

// PostgreSQL: one statement, not awaited (PreparedQuery.later), so it leaves with the COMMIT. The
// upsert of the head row takes the merchant's lock, numbers the record and hashes it from the head's
// hash, and the insert writes it with what the upsert returned; the lock is held from there to the
// commit only. The canonical text is built around the number (canonicalParts).
const appendOnPostgres = prepared<UnchainedRecord & { before: string; after: string; genesis: string }>((db, arg) => {
  const text = (name: Parameters<typeof arg>[0]) => sql`cast(${arg(name)} as text)`;
  const digest = (prev: unknown, seq: unknown) =>
    sql`encode(sha256(convert_to(${prev} || ${text('before')} || ${seq} || ${text('after')}, 'UTF8')), 'hex')`;
  const query = sql`with head as (
    insert into audit_heads as h (user_id, seq, prev_hash, hash)
    values (${text('user_id')}, 1, ${text('genesis')}, ${digest(text('genesis'), sql`'1'`)})
    on conflict (user_id) do update set
      seq = h.seq + 1,
      prev_hash = h.hash,
      hash = ${digest(sql`h.hash`, sql`cast(h.seq + 1 as text)`)}
    returning seq, prev_hash, hash
  )
  insert into audit_events
    (id, user_id, seq, at, mode, actor_kind, actor_id, action, object_id, ip, user_agent, request_id, summary, prev_hash, hash)
  select ${text('id')}, ${text('user_id')}, head.seq, cast(${arg('at')} as bigint), ${text('mode')}, ${text('actor_kind')},
    ${text('actor_id')}, ${text('action')}, ${text('object_id')}, ${text('ip')}, ${text('user_agent')}, ${text('request_id')},
    ${text('summary')}, head.prev_hash, head.hash
  from head`;
  return { compile: () => query.compile(db) };
});

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
 * Appends a record to its merchant's chain in the caller's transaction. On SQLite, in one of the
 * store's transactions, it is handed to the batch's commit (appendAtCommitOnSqlite); in any other
 * SQLite transaction, whose writers take turns and whose statements cost no round trip, the head
 * is read and moved here.
 */
export async function appendRecord(trx: Db, record: UnchainedRecord): Promise<void> {
  if (engineOf(trx) === 'postgres') {
    const { before, after } = canonicalParts(record);
    await appendOnPostgres.later(trx, { ...record, before, after, genesis: GENESIS_HASH });
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
};

/** The merchant's records, newest first; with `mode`, only that mode's and those without one. */
export async function listAudit(db: Db, userId: string, mode: Mode | null, filters: AuditFilters): Promise<AuditRow[]> {
  return listAuditQuery(db, userId, mode, filters).execute();
}

/** listAudit's query, for its plan to be read. */
export function listAuditQuery(db: Db, userId: string, mode: Mode | null, filters: AuditFilters) {
  let query = db.selectFrom('audit_events').selectAll().where('user_id', '=', userId);
  if (mode) query = query.where((eb) => eb.or([eb('mode', '=', mode), eb('mode', 'is', null)]));
  if (filters.actor_kind) query = query.where('actor_kind', '=', filters.actor_kind as any);
  if (filters.actor_id) {
    query = query.where('actor_id', '=', filters.actor_id);
    // The same text as the partial index's condition (migration 0041), which is how SQLite's
    // planner knows it may read that index; a key's or the service's records are read newest first.
    if (filters.actor_kind && PEOPLE.includes(filters.actor_kind)) query = query.where(PEOPLE_ONLY);
  }
  if (filters.action) query = query.where('action', '=', filters.action);
  if (filters.object_id) query = query.where('object_id', '=', filters.object_id);
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
