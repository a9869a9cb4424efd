import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import semver from 'semver';

// .npmrc hides npm's warnings because its engine check compares packages with the Node npm runs
// on, not the pinned Node that runs them (docs/configuration.md, "Install"). This is the check npm cannot make:
// every installed package accepts the pinned Node, so hiding those warnings hides nothing true.

const root = path.resolve(import.meta.dirname, '..');
const lock = JSON.parse(fs.readFileSync(path.join(root, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { version?: string; engines?: { node?: string } | string[]; optional?: boolean }>;
};
const manifest = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));

test('the tests run on the pinned Node', () => {
  assert.equal(process.version, `v${lock.packages['node_modules/node']!.version}`);
  assert.ok(semver.satisfies(process.version, manifest.engines.node));
});

test('every package in the lockfile accepts the pinned Node', () => {
  const pinned = lock.packages['node_modules/node']!.version!;
  const refused: string[] = [];
  for (const [where, entry] of Object.entries(lock.packages)) {
    const range = !entry.engines || Array.isArray(entry.engines) ? undefined : entry.engines.node;
    if (range && !entry.optional && !semver.satisfies(pinned, range, { includePrerelease: true }))
      refused.push(`${where || 'tono'} needs node ${range}`);
  }
  assert.deepEqual(refused, []);
});

test('npm itself may run on Node 20 (devEngines), and .npmrc says why its warnings are hidden', () => {
  assert.equal(manifest.devEngines.runtime.version, '>=20');
  const npmrc = fs.readFileSync(path.join(root, '.npmrc'), 'utf8');
  assert.match(npmrc, /^loglevel=error$/m);
});
