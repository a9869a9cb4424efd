import { sql, type Kysely } from 'kysely';
import { rebuildPartial } from './partial-index.ts';

// PostgreSQL records a delivery's attempt in place, as a heap-only tuple that writes no index entry,
// only when the update changes no column an index reads, the condition of a partial index
// included. The index of an endpoint's failed deliveries named `status` in its condition, so every
// delivery's success wrote its row's three other index entries again. `failed_at` is set exactly
// when a delivery fails (and never cleared), so the index now holds the rows that have one.
export async function up(db: Kysely<any>): Promise<void> {
  await rebuildPartial(
    db,
    'webhook_deliveries_failed',
    'webhook_deliveries',
    ['endpoint_id', 'failed_at'],
    sql`failed_at is not null`,
  );
}
