import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import fc from 'fast-check';
import { can, permissionTableMarkdown, ROLE_PERMISSIONS, ROLES, type Role } from './team.permissions.ts';
import { inviteProblem, removalProblem, roleChangeProblem } from './team.rules.ts';

// The permission table and the rules of who may change whom (docs/team.md).

test('docs/team.md shows the permission table exactly as the code has it', () => {
  const doc = fs.readFileSync('docs/team.md', 'utf8');
  const shown = /<!-- permission-table -->\n([\s\S]*?)\n<!-- \/permission-table -->/.exec(doc);
  assert.ok(shown, 'docs/team.md has the marked table');
  assert.equal(shown[1], permissionTableMarkdown());
});

test('the roles nest: each role can do at least what the next one down can, and the owner everything', () => {
  for (let i = 1; i < ROLES.length; i += 1)
    for (const permission of ROLE_PERMISSIONS[ROLES[i]])
      assert.ok(
        can(ROLES[i - 1], permission) || ROLES[i] === 'support',
        `${ROLES[i - 1]} ⊇ ${ROLES[i]}: ${permission}`,
      );
  assert.deepEqual(ROLE_PERMISSIONS.viewer, ['read']);
  assert.ok(!can('admin', 'team.owners'));
});

const role = fc.constantFrom<Role>(...ROLES);

test('no change leaves a team without an owner, and only owners touch owners', () => {
  fc.assert(
    fc.property(role, role, role, fc.integer({ min: 1, max: 4 }), (actor, target, to, owners) => {
      const change = roleChangeProblem({ actor, target, to, owners });
      if (change === null) {
        assert.ok(can(actor, 'team.manage'));
        const ownersAfter = owners - (target === 'owner' ? 1 : 0) + (to === 'owner' ? 1 : 0);
        assert.ok(ownersAfter >= 1, 'an owner remains');
        if ((target === 'owner') !== (to === 'owner')) assert.equal(actor, 'owner');
      }
      const removal = removalProblem({ actor, target, owners });
      if (removal === null) {
        assert.ok(can(actor, 'team.manage'));
        if (target === 'owner') assert.ok(actor === 'owner' && owners >= 2);
      }
      const invite = inviteProblem(actor, to);
      if (invite === null) assert.ok(can(actor, 'team.manage') && (to !== 'owner' || actor === 'owner'));
    }),
  );
});
