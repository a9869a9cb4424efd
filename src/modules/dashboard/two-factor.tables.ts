// Row types of two-factor sign-in (migration 0036, docs/team.md), merged into the store's Database.
import type { Flag } from '../../store/tables.ts';

/** A member's authenticator: enrolling while `enabled_at` is null, in use once a code confirmed it. */
export interface TwoFactorMembersTable {
  /** The member (members.id) whose second step this is. */
  member_id: string;
  /** The base32 TOTP secret, sealed (deps.secrets); shown only while enrolling. */
  totp_secret_sealed: string;
  enabled_at: number | null;
  /** The TOTP time step of the last code accepted; a code of this step or earlier is refused. */
  last_step: number | null;
  created_at: number;
  updated_at: number;
  /** The challenge of a passkey being added (migration 0040), until it is used or ends. */
  passkey_challenge: string | null;
  passkey_challenge_expires_at: number | null;
}

export interface TwoFactorRecoveryCodesTable {
  member_id: string;
  /** SHA-256 (hex) of the member id and the code; the code itself is shown once and stored nowhere. */
  code_hash: string;
  created_at: number;
  used_at: number | null;
}

/** A right password waiting for its second step: a code, or setting up an authenticator the team requires. */
export interface TwoFactorPendingSignInsTable {
  /** SHA-256 (hex) of the cookie's value. */
  token_hash: string;
  member_id: string;
  /** The merchant whose dashboard the session will open. */
  user_id: string;
  step: 'code' | 'setup';
  /** The dashboard page to go on to once signed in (checked by the login route). */
  next_path: string;
  created_at: number;
  expires_at: number;
  used_at: number | null;
  /** The challenge a passkey must sign for this sign-in (migration 0040), once asked for. */
  passkey_challenge: string | null;
}

/** A member's passkey (migration 0040): a WebAuthn credential's public key, never a secret. */
export interface TwoFactorPasskeysTable {
  id: string;
  member_id: string;
  /** The credential's id, base64url, as the authenticator names it. */
  credential_id: string;
  /** The COSE public key, base64url. */
  public_key: string;
  /** The authenticator's signature counter at its last use (0 for those that keep none). */
  counter: number;
  /** JSON array of the transports the browser reported (usb, nfc, ble, internal, hybrid). */
  transports: string;
  /** The member's name for it. */
  name: string;
  created_at: number;
  last_used_at: number | null;
}

/** The team's two-factor setting, the merchant's. */
export interface TwoFactorTeamSettingsTable {
  user_id: string;
  required: Flag;
  updated_at: number;
}

export interface TwoFactorTables {
  two_factor_members: TwoFactorMembersTable;
  two_factor_recovery_codes: TwoFactorRecoveryCodesTable;
  two_factor_pending_sign_ins: TwoFactorPendingSignInsTable;
  two_factor_team_settings: TwoFactorTeamSettingsTable;
  two_factor_passkeys: TwoFactorPasskeysTable;
}

declare module '../../store/tables.ts' {
  interface Database extends TwoFactorTables {}
}
