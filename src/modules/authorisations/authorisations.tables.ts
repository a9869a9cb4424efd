/**
 * A payer sent to their bank to approve an enduring consent (a recurring consent or a
 * subscription); `state` comes back on the redirect. Written before the bank is asked.
 */
export interface EnduringAuthorisationsTable {
  state: string;
  /** recurring | subscription: what the approval creates. */
  kind: string;
  request_id: string;
  bank_id: string;
  /** The bank's consent, once the bank made one. */
  bank_consent_id: string | null;
  /** What the payer typed on the page (JSON); merged with the merchant's on approval. */
  details: string | null;
  /** page | embed | api */
  channel: string | null;
  /** null while pending; authorised | declined | failed once settled. */
  outcome: string | null;
  /** The recurring consent or subscription an approval created. */
  object_id: string | null;
  created_at: number;
  completed_at: number | null;
}

export interface AuthorisationTables {
  enduring_authorisations: EnduringAuthorisationsTable;
}

declare module '../../store/tables.ts' {
  interface Database extends AuthorisationTables {}
}
