import { sql, type Kysely } from 'kysely';
import { engineOf } from '../db.ts';

// PostgreSQL: a guarded write sent without waiting for its answer (an execution's outcome, recorded
// only if nothing moved the payment since it was read) must still fail its transaction when its
// guard stopped it, since the statements after it assume it happened. It is sent as
// `with written as (update … returning …) select fail_unless_written(count(*)) from written`, and
// this function raises SQLSTATE TN001 when no row was written: PostgreSQL then refuses the rest of
// the transaction and its COMMIT, and the caller tells the failure by its code
// (src/store/db.ts, failUnlessWritten). SQLite has no round trips to save and checks in the service.
export async function up(db: Kysely<any>): Promise<void> {
  if (engineOf(db) !== 'postgres') return;
  await sql`create function fail_unless_written(written bigint) returns bigint language plpgsql as $$
    begin
      if written = 0 then
        raise exception 'the guarded row was not written: it moved since it was read' using errcode = 'TN001';
      end if;
      return written;
    end $$`.execute(db);
}
