import { can, type Role } from './team.permissions.ts';

// Who may change whom in a team (docs/team.md, "Roles"): pure, so the rules are checked on their
// own. A refusal is a sentence for the page; null means allowed.

export function inviteProblem(actor: Role, role: Role): string | null {
  if (!can(actor, 'team.manage')) return 'Only an owner or an admin can invite members.';
  if (role === 'owner' && !can(actor, 'team.owners')) return 'Only an owner can invite another owner.';
  return null;
}

export function roleChangeProblem(input: { actor: Role; target: Role; to: Role; owners: number }): string | null {
  if (!can(input.actor, 'team.manage')) return 'Only an owner or an admin can change roles.';
  if (
    (input.target === 'owner' || input.to === 'owner') &&
    input.target !== input.to &&
    !can(input.actor, 'team.owners')
  )
    return 'Only an owner can make a member an owner, or change an owner’s role.';
  if (input.target === 'owner' && input.to !== 'owner' && input.owners <= 1)
    return 'The team’s last owner cannot be given another role. Make someone else an owner first.';
  return null;
}

export function removalProblem(input: { actor: Role; target: Role; owners: number }): string | null {
  if (!can(input.actor, 'team.manage')) return 'Only an owner or an admin can remove members.';
  if (input.target === 'owner' && !can(input.actor, 'team.owners')) return 'Only an owner can remove an owner.';
  if (input.target === 'owner' && input.owners <= 1)
    return 'The team’s last owner cannot be removed. Make someone else an owner first.';
  return null;
}
