import { sha256Hex } from '../../shared/crypto.ts';

// The audit trail's chain, as pure functions (docs/audit.md, "The chain"). A record's hash covers
// its canonical form (every column but the two hashes, as JSON with sorted keys) and the hash of
// the merchant's record before it, so changing, removing or inserting a record breaks the chain
// at that record, and anyone holding the database can recompute it.

/** The `prev_hash` of a merchant's first record. */
export const GENESIS_HASH = '0'.repeat(64);

/** What a record's hash covers. */
export type ChainedFields = {
  id: string;
  user_id: string;
  seq: number;
  at: number;
  mode: string | null;
  actor_kind: string;
  actor_id: string;
  action: string;
  object_id: string | null;
  ip: string | null;
  user_agent: string | null;
  request_id: string | null;
  summary: string;
};

export type ChainedRecord = ChainedFields & { prev_hash: string; hash: string };

/** The canonical text of `fields` numbered `seq` (taken apart, so a record need not be copied to be numbered). */
function canonicalText(fields: Omit<ChainedFields, 'seq'>, seq: number): string {
  // The keys in sorted order, so JSON.stringify (which keeps insertion order) gives the sorted-key
  // form without sorting on every change; a test holds it equal to a sorted-key stringify.
  const sorted = {
    action: fields.action,
    actor_id: fields.actor_id,
    actor_kind: fields.actor_kind,
    at: Number(fields.at),
    id: fields.id,
    ip: fields.ip,
    mode: fields.mode,
    object_id: fields.object_id,
    request_id: fields.request_id,
    seq: Number(seq),
    summary: fields.summary,
    user_agent: fields.user_agent,
    user_id: fields.user_id,
  };
  return JSON.stringify(sorted);
}

/** The canonical form of a record: its chained fields as JSON, keys sorted. */
export function canonicalRecord(fields: ChainedFields): string {
  return canonicalText(fields, fields.seq);
}

/** sha256(prev_hash + canonical record), hex. */
export function chainHash(prevHash: string, fields: ChainedFields): string {
  return chainHashAt(prevHash, fields, fields.seq);
}

/** chainHash of `fields` numbered `seq`. */
export function chainHashAt(prevHash: string, fields: Omit<ChainedFields, 'seq'>, seq: number): string {
  return sha256Hex(prevHash + canonicalText(fields, seq));
}

/** A merchant's head row: the newest record's number and hash, as the writers left them. */
export type ChainHead = { seq: number; hash: string };

export type ChainBreak = {
  kind: 'altered' | 'removed' | 'inserted';
  /** The seq of the record named: the altered or inserted one, or the first one missing. */
  seq: number;
  /** The id of the record named, when it is there (a removed record is not). */
  id: string | null;
  reason: string;
};

export type ChainReport = { records: number; broken: ChainBreak | null };

/**
 * Walks one merchant's records in seq order and names the first that does not belong: one whose
 * hash is not its own (altered), a missing number (removed, also when the head says there were
 * more), or one that does not follow the record before it (inserted).
 */
export function verifyChain(records: readonly ChainedRecord[], head: ChainHead | null): ChainReport {
  const walk = chainWalk(head);
  for (const record of records) {
    const broken = walk.step(record);
    if (broken) return { records: records.length, broken };
  }
  return { records: records.length, broken: walk.finish() };
}

/**
 * `verifyChain` a record at a time, for chains read in pages: `step` each record in seq order
 * until one answers a break, then `finish` (the checks against the head).
 */
export function chainWalk(head: ChainHead | null) {
  let last: { seq: number; hash: string } = { seq: 0, hash: GENESIS_HASH };
  let first: ChainedRecord | null = null;
  let beyondHead: ChainedRecord | null = null;
  const headSeq = head ? Number(head.seq) : 0;
  return {
    step(record: ChainedRecord): ChainBreak | null {
      const seq = Number(record.seq);
      const expected = last.seq + 1;
      const broken = (kind: ChainBreak['kind'], reason: string, at = seq, id: string | null = record.id) => ({
        kind,
        seq: at,
        id,
        reason,
      });
      if (chainHash(record.prev_hash, record) !== record.hash)
        return broken('altered', `record ${seq} (${record.id}) does not match its hash`);
      const linked = record.prev_hash === last.hash;
      if (linked && seq !== expected)
        return broken('inserted', `record ${record.id} follows record ${last.seq} but is numbered ${seq}`);
      if (!linked && seq > expected)
        return broken('removed', `record ${expected} is missing (the next is ${seq})`, expected, null);
      if (!linked) return broken('inserted', `record ${seq} (${record.id}) does not follow record ${last.seq}`);
      first ??= record;
      if (head && seq > headSeq) beyondHead ??= record;
      last = { seq, hash: record.hash };
      return null;
    },
    finish(): ChainBreak | null {
      if (!head) {
        if (!first) return null;
        return { kind: 'inserted', seq: Number(first.seq), id: first.id, reason: 'there are records but no head' };
      }
      if (beyondHead)
        return {
          kind: 'inserted',
          seq: Number(beyondHead.seq),
          id: beyondHead.id,
          reason: `record ${beyondHead.seq} (${beyondHead.id}) is beyond the head (record ${headSeq})`,
        };
      if (headSeq > last.seq)
        return {
          kind: 'removed',
          seq: last.seq + 1,
          id: null,
          reason: `the head is at record ${headSeq} but the last record is ${last.seq}`,
        };
      if (head.hash !== last.hash)
        return {
          kind: 'altered',
          seq: last.seq,
          id: null,
          reason: `the head's hash does not match record ${last.seq}`,
        };
      return null;
    },
  };
}
