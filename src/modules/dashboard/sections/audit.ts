import { stringify } from 'csv-stringify/sync';
import { historyOf, listAuditEvents, type AuditRow } from '../../audit/audit.service.ts';
import { ACTOR_KINDS } from '../../audit/audit.schemas.ts';
import { cursorOf, dateFilterProblem, dayBound, localDay, oneOf, text } from '../dashboard.format.ts';
import type { Kit, Scope, Signed } from '../dashboard.kit.ts';
import { spreadsheetSafe } from '../dashboard.present.ts';
import { memberNamesOf } from '../../team/team.service.ts';

// The audit log: every change to the merchant's data in this mode (and the settings, which have
// none), who made it and from where, with filters, pages and a CSV export; and each object's
// history on its own page (the `audit-history` partial).

const hidden = { schema: { hide: true } };
const PAGE = 50;
/** The most records one export holds; past it the page says to narrow the dates. */
export const AUDIT_CSV_MAX_ROWS = 50_000;

const CSV_HEADER = [
  'seq',
  'id',
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
  'hash',
];

/** A record as a page shows it: the summary as compact text, a member by their email. */
function shown(row: AuditRow, members: Map<string, string>) {
  const member = row.actor_kind === 'member' ? members.get(row.actor_id) : undefined;
  return {
    id: row.id,
    seq: Number(row.seq),
    at: Number(row.at),
    mode: row.mode,
    actor: member ? `member: ${member}` : `${row.actor_kind}: ${row.actor_id}`,
    action: row.action,
    object_id: row.object_id,
    ip: row.ip,
    summary: row.summary === '{}' ? '' : row.summary,
  };
}

/** One object's history, newest first, for its page; never another merchant's. */
export async function auditTrailOf(signed: Signed, objectId: string) {
  const [rows, members] = await Promise.all([
    historyOf(signed.ctx.db, signed.ctx.merchant.id, objectId),
    memberNamesOf(signed.ctx.db, signed.ctx.merchant.id),
  ]);
  return rows.map((row) => shown(row, members));
}

/** The filters of the log's form, each dropped when it is not well formed. */
const filtersOf = (query: Record<string, unknown>) => ({
  member: /^mem_[0-9A-Z]{26}$/.test(text(query.member, 40)) ? text(query.member, 40) : '',
  actor_kind: oneOf(query.actor_kind, ACTOR_KINDS),
  actor: text(query.actor, 320),
  action: /^[a-z_]+(\.[a-z_]+)+$/.test(text(query.action, 64)) ? text(query.action, 64) : '',
  object: text(query.object, 64),
  // Read whole, not cut to a date's length: a longer value is no date, and the page says so.
  from: text(query.from, 40),
  to: text(query.to, 40),
  after: cursorOf('audit', query.after),
});

/** The date inputs as the filter form labels them, for the message about a date it cannot read. */
const DATE_LABELS = { from: 'From', to: 'To' };

// A member chosen from the list is an actor of kind member with that id.
const queryOf = (filters: ReturnType<typeof filtersOf>, zone: string) => ({
  actor_kind: filters.member ? 'member' : filters.actor_kind || undefined,
  actor_id: filters.member || filters.actor || undefined,
  action: filters.action || undefined,
  object_id: filters.object || undefined,
  created_gte: dayBound(filters.from, zone, false) ?? undefined,
  created_lt: dayBound(filters.to, zone, true) ?? undefined,
});

export function registerAuditPages(scope: Scope, kit: Kit): void {
  scope.get(
    '/dashboard/:mode/audit',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const filters = filtersOf(request.query);
        const [page, members] = await Promise.all([
          listAuditEvents(signed.ctx.db, signed.ctx.merchant.id, signed.mode, {
            ...queryOf(filters, kit.zone()),
            starting_after: filters.after || undefined,
            limit: PAGE,
          }),
          memberNamesOf(signed.ctx.db, signed.ctx.merchant.id),
        ]);
        return kit.render(reply, 200, 'audit', {
          title: 'Audit log',
          ...kit.layoutOf(signed, 'audit'),
          filters,
          dateProblem: dateFilterProblem(filters, kit.zone(), DATE_LABELS),
          members: [...members].map(([id, email]) => ({ id, email })),
          records: page.items.map((row) => shown(row, members)),
          next: page.hasMore ? page.items[page.items.length - 1]!.id : null,
          actorKinds: ACTOR_KINDS,
        });
      },
      { permission: 'read' },
    ),
  );

  scope.get(
    '/dashboard/:mode/audit/export.csv',
    hidden,
    kit.guard(
      async (request, reply, signed) => {
        const filters = filtersOf(request.query);
        const page = await listAuditEvents(signed.ctx.db, signed.ctx.merchant.id, signed.mode, {
          ...queryOf(filters, kit.zone()),
          limit: AUDIT_CSV_MAX_ROWS,
        });
        if (page.hasMore) {
          return kit.message(
            reply,
            413,
            'Too many records for one file',
            `The filters match more than ${AUDIT_CSV_MAX_ROWS} records, the most one file holds. Narrow the dates and export in parts.`,
            signed,
            'audit',
          );
        }
        const rows = page.items.map((row) => [
          Number(row.seq),
          row.id,
          new Date(Number(row.at)).toISOString(),
          row.mode ?? '',
          row.actor_kind,
          row.actor_id,
          row.action,
          row.object_id ?? '',
          row.ip ?? '',
          row.user_agent ?? '',
          row.request_id ?? '',
          row.summary,
          row.hash,
        ]);
        const safe = rows.map((row) => row.map((cell) => (typeof cell === 'string' ? spreadsheetSafe(cell) : cell)));
        const csv = stringify([CSV_HEADER, ...safe], { record_delimiter: 'windows' });
        // The merchant's day, not UTC's, which is still yesterday for half a NZ morning.
        const day = localDay(signed.ctx.clock.now(), kit.zone());
        return reply
          .header('content-type', 'text/csv; charset=utf-8')
          .header('content-disposition', `attachment; filename="tono-${signed.mode}-audit-${day}.csv"`)
          .header('cache-control', 'no-store')
          .send(csv);
      },
      { permission: 'read' },
    ),
  );
}
