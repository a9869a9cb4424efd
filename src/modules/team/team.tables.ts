// Row types of the team module, merged into the store's Database in src/store/tables.ts.
import type { Role } from './team.permissions.ts';

export interface MembersTable {
  /** `mem_…` */
  id: string;
  /** The merchant whose dashboard the member signs in to. */
  user_id: string;
  /** Lower-cased; unique among members that are not removed (sign-in is by email). */
  email: string;
  name: string | null;
  /** scrypt, as src/shared/crypto.ts writes it. */
  password_hash: string;
  role: Role;
  created_at: number;
  /** The member who invited this one; null for an owner made with the merchant or by the operator. */
  invited_by: string | null;
  /** Set when removed from the team: the member can no longer sign in and their sessions end. */
  removed_at: number | null;
}

export interface InvitationsTable {
  /** `inv_…` */
  id: string;
  /** SHA-256 (hex) of the emailed token; the token itself is stored nowhere. */
  token_hash: string;
  user_id: string;
  email: string;
  role: Role;
  invited_by: string;
  created_at: number;
  expires_at: number;
  accepted_at: number | null;
  revoked_at: number | null;
}

export interface TeamSettingsTable {
  user_id: string;
  /** The most a member with the support role may refund in one refund, in cents. */
  support_refund_limit_cents: number;
  updated_at: number;
}

export interface TeamTables {
  members: MembersTable;
  invitations: InvitationsTable;
  team_settings: TeamSettingsTable;
}

declare module '../../store/tables.ts' {
  interface Database extends TeamTables {}
}
