import type { Kysely } from 'kysely';

// API-call rate limits shared by every process on a PostgreSQL database (src/store/rate-buckets.ts):
// a token bucket per key, which each process reports the calls it let through to every 50 ms.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('rate_buckets')
    .addColumn('scope', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('tokens', 'double precision', (c) => c.notNull())
    .addColumn('at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('rate_buckets_pk', ['scope', 'key'])
    .execute();
  await db.schema.createIndex('rate_buckets_at').on('rate_buckets').column('at').execute();
}
