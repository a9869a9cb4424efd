import { iso } from '../../shared/time.ts';
import type { AuditRow } from './audit.repo.ts';

/** A record as the API shows it. */
export function presentAuditEvent(row: AuditRow) {
  return {
    id: row.id,
    seq: Number(row.seq),
    created_at: iso(Number(row.at)),
    mode: row.mode,
    actor: { kind: row.actor_kind, id: row.actor_id },
    action: row.action,
    object_id: row.object_id,
    ip: row.ip,
    user_agent: row.user_agent,
    request_id: row.request_id,
    summary: JSON.parse(row.summary) as Record<string, unknown>,
    prev_hash: row.prev_hash,
    hash: row.hash,
  };
}
