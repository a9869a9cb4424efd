import { isIP } from 'node:net';
import type {
  AuthenticationResponseJSON,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
  verifyRegistrationResponse,
} from '@simplewebauthn/server';
import { newId } from '../../shared/ids.ts';
import type { Deps, Origin } from '../context.ts';
import {
  changeWithCode,
  recordChange,
  underCodeLimits,
  type CodeAttempt,
  type CodeRefusal,
  type Member,
  type Passed,
  type PendingSignIn,
} from './dashboard.two-factor.ts';
import {
  deletePasskey,
  findPendingSignIn,
  findTwoFactorMember,
  insertPasskey,
  movePasskeyCounter,
  passkeyOfMember,
  passkeysOfMember,
  putRegistrationChallenge,
  putSignInChallenge,
  spendPendingSignIn,
  takeRegistrationChallenge,
  type PasskeyRow,
} from './two-factor.repo.ts';

// Passkeys (WebAuthn) as a second kind of second step (docs/team.md, "Passkeys"): a member whose
// two-factor sign-in is on may add security keys or platform passkeys, and then sign in with one
// instead of typing a code. The relying party is the service's public address (PUBLIC_BASE_URL):
// its host is the RP ID, its origin the one every response must come from. Only public keys are
// kept; a ceremony's challenge is used once, and a signature counter only moves forward.

/**
 * The WebAuthn library, loaded at the first passkey ceremony: with its ASN.1 and certificate
 * dependencies it is some 290 modules, which a start need not load for what few sign-ins use.
 */
const webauthn = () => import('@simplewebauthn/server');

/** The most passkeys one member may keep. */
export const MAX_PASSKEYS = 10;
const CHALLENGE_MS = 5 * 60_000;
const NAME_MAX = 60;
/**
 * The public key algorithms taken (COSE ids: EdDSA, ES256, RS256), named rather than left to the
 * library, whose default probes the runtime for post-quantum ones and prints a warning doing it.
 */
const ALGORITHMS = [-8, -7, -257];

export type PasskeyView = { id: string; name: string; createdAt: number; lastUsedAt: number | null };

export type PasskeyRefusal =
  | { kind: 'not_enabled' }
  /** The service's address is an IP address, which no browser takes as a relying party. */
  | { kind: 'no_host_name' }
  | { kind: 'too_many' }
  | { kind: 'bad_name' }
  /** The browser's answer did not verify (wrong origin, challenge used or ended, malformed). */
  | { kind: 'not_verified' };

function relyingParty(deps: Deps): { rpID: string; origin: string } {
  const url = new URL(deps.config.publicBaseUrl);
  return { rpID: url.hostname, origin: url.origin };
}

/** Whether browsers will make passkeys for this service: its public address must have a host name. */
export function passkeysAvailable(deps: Deps): boolean {
  return isIP(relyingParty(deps).rpID.replace(/^\[|\]$/g, '')) === 0;
}

const view = (row: PasskeyRow): PasskeyView => ({
  id: row.id,
  name: row.name,
  createdAt: Number(row.created_at),
  lastUsedAt: row.last_used_at === null ? null : Number(row.last_used_at),
});

const transportsOf = (row: PasskeyRow): string[] => JSON.parse(row.transports) as string[];

export async function passkeysOf(deps: Deps, member: Member): Promise<PasskeyView[]> {
  return (await passkeysOfMember(deps.db, member.memberId)).map(view);
}

/** Whether a member has a passkey to offer at sign-in (and the browser can use it here). */
export async function hasPasskeys(deps: Deps, memberId: string): Promise<boolean> {
  return passkeysAvailable(deps) && (await passkeysOfMember(deps.db, memberId)).length > 0;
}

/**
 * The options for the browser's `navigator.credentials.create`, with a new challenge kept for 5
 * minutes. Adding a passkey changes the second step, so it needs a current code (or an unused
 * recovery code), as new recovery codes do: the challenge is kept only once the code is accepted,
 * and without it no passkey can be added. The code is asked for only when a passkey could be added.
 */
export async function passkeyRegistrationOptions(
  deps: Deps,
  member: Member,
  code: CodeAttempt,
): Promise<PublicKeyCredentialCreationOptionsJSON | PasskeyRefusal | CodeRefusal> {
  if (!passkeysAvailable(deps)) return { kind: 'no_host_name' };
  const row = await findTwoFactorMember(deps.db, member.memberId);
  if (!row || row.enabled_at === null) return { kind: 'not_enabled' };
  const existing = await passkeysOfMember(deps.db, member.memberId);
  if (existing.length >= MAX_PASSKEYS) return { kind: 'too_many' };
  const { rpID } = relyingParty(deps);
  const options = await (await webauthn()).generateRegistrationOptions({
    rpName: 'Tono dashboard',
    rpID,
    userName: member.email,
    userID: new TextEncoder().encode(member.memberId),
    attestationType: 'none',
    excludeCredentials: existing.map((passkey) => ({ id: passkey.credential_id, transports: transportsOf(passkey) })),
    authenticatorSelection: { residentKey: 'discouraged', userVerification: 'preferred' },
    supportedAlgorithmIDs: ALGORITHMS,
  });
  return changeWithCode(deps, member, code, 'member.passkey_add', async (trx) => {
    if (!(await putRegistrationChallenge(trx, member.memberId, options.challenge, deps.clock.now() + CHALLENGE_MS)))
      return { kind: 'not_enabled' } as const;
    return options;
  });
}

/** Verifies the browser's new credential against the member's challenge (used once) and keeps its public key. */
export async function addPasskey(
  deps: Deps,
  member: Member,
  input: { response: unknown; name: unknown },
  origin: Origin,
): Promise<{ kind: 'added'; passkey: PasskeyView } | PasskeyRefusal> {
  const name = typeof input.name === 'string' ? input.name.trim() : '';
  if (name.length === 0 || name.length > NAME_MAX) return { kind: 'bad_name' };
  const now = deps.clock.now();
  const challenge = await takeRegistrationChallenge(deps.db, member.memberId, now);
  if (!challenge) return { kind: 'not_verified' };
  const { rpID, origin: expectedOrigin } = relyingParty(deps);
  let verified: Awaited<ReturnType<typeof verifyRegistrationResponse>>;
  try {
    verified = await (await webauthn()).verifyRegistrationResponse({
      response: input.response as RegistrationResponseJSON,
      expectedChallenge: challenge,
      expectedOrigin,
      expectedRPID: rpID,
      requireUserVerification: false,
      supportedAlgorithmIDs: ALGORITHMS,
    });
  } catch {
    return { kind: 'not_verified' };
  }
  if (!verified.verified) return { kind: 'not_verified' };
  const credential = verified.registrationInfo.credential;
  const row: PasskeyRow = {
    id: newId('passkey'),
    member_id: member.memberId,
    credential_id: credential.id,
    public_key: Buffer.from(credential.publicKey).toString('base64url'),
    counter: credential.counter,
    transports: JSON.stringify(credential.transports ?? []),
    name,
    created_at: now,
    last_used_at: null,
  };
  return deps.store.transaction(async (trx) => {
    if ((await passkeysOfMember(trx, member.memberId)).length >= MAX_PASSKEYS) return { kind: 'too_many' } as const;
    if (!(await insertPasskey(trx, row))) return { kind: 'not_verified' } as const;
    await recordChange(trx, member, origin, 'member.passkey_add', now, { passkey: row.id, name });
    return { kind: 'added' as const, passkey: view(row) };
  });
}

/**
 * Removes one of the member's passkeys, with a current code or an unused recovery code (a change to
 * the second step). Another member's passkey, or one gone, is `not_found`, and costs no code.
 */
export async function removePasskey(
  deps: Deps,
  member: Member,
  id: string,
  code: CodeAttempt,
): Promise<{ kind: 'removed' } | { kind: 'not_found' } | CodeRefusal> {
  const passkey = (await passkeysOfMember(deps.db, member.memberId)).find((row) => row.id === id);
  if (!passkey) return { kind: 'not_found' };
  return changeWithCode(deps, member, code, 'member.passkey_remove', async (trx) => {
    // Removed meanwhile (another tab): the code is still taken, as it was right.
    if (!(await deletePasskey(trx, member.memberId, id))) return { kind: 'not_found' } as const;
    await recordChange(trx, member, code.origin, 'member.passkey_remove', deps.clock.now(), {
      passkey: id,
      name: passkey.name,
    });
    return { kind: 'removed' } as const;
  });
}

/** The options for `navigator.credentials.get` at sign-in, the challenge kept on the pending sign-in. */
export async function passkeySignInOptions(
  deps: Deps,
  pending: PendingSignIn,
): Promise<PublicKeyCredentialRequestOptionsJSON | null> {
  if (pending.step !== 'code' || !passkeysAvailable(deps)) return null;
  const passkeys = await passkeysOfMember(deps.db, pending.member.memberId);
  if (passkeys.length === 0) return null;
  const options = await (await webauthn()).generateAuthenticationOptions({
    rpID: relyingParty(deps).rpID,
    allowCredentials: passkeys.map((passkey) => ({ id: passkey.credential_id, transports: transportsOf(passkey) })),
    userVerification: 'preferred',
  });
  await putSignInChallenge(deps.db, pending.tokenHash, options.challenge);
  return options;
}

/**
 * A passkey's signature over the pending sign-in's challenge spends the sign-in, once, under the
 * same limits as a code: a wrong or replayed answer counts as a wrong code.
 */
export async function passSignInWithPasskey(
  deps: Deps,
  pending: PendingSignIn,
  response: unknown,
  client: string,
): Promise<Passed | CodeRefusal> {
  if (pending.step !== 'code') return { kind: 'expired' };
  const credentialId = (response as { id?: unknown } | null)?.id;
  if (typeof credentialId !== 'string' || credentialId.length > 1024) return { kind: 'malformed' };
  return underCodeLimits(deps, pending.member.memberId, client, async () => {
    const [row, passkey] = await Promise.all([
      findPendingSignIn(deps.db, pending.tokenHash),
      passkeyOfMember(deps.db, pending.member.memberId, credentialId),
    ]);
    if (!row?.passkey_challenge || !passkey) return { kind: 'wrong' } as const;
    const { rpID, origin } = relyingParty(deps);
    let newCounter: number;
    try {
      const verified = await (await webauthn()).verifyAuthenticationResponse({
        response: response as AuthenticationResponseJSON,
        expectedChallenge: row.passkey_challenge,
        expectedOrigin: origin,
        expectedRPID: rpID,
        credential: {
          id: passkey.credential_id,
          publicKey: Buffer.from(passkey.public_key, 'base64url'),
          counter: Number(passkey.counter),
          transports: transportsOf(passkey),
        },
        requireUserVerification: false,
      });
      if (!verified.verified) return { kind: 'wrong' } as const;
      newCounter = verified.authenticationInfo.newCounter;
    } catch {
      return { kind: 'wrong' } as const;
    }
    return deps.store.transaction(async (trx) => {
      const now = deps.clock.now();
      // A counter that does not move forward is a cloned authenticator's or a replayed signature.
      if (!(await movePasskeyCounter(trx, passkey.id, newCounter, now))) return { kind: 'wrong' } as const;
      if (!(await spendPendingSignIn(trx, pending.tokenHash, now))) return { kind: 'expired' } as const;
      return { kind: 'passed' as const, memberId: pending.member.memberId };
    });
  });
}
