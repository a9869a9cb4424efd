import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { runtimeFlagsOfStart, serviceNodeFlags } from '../bench/process.ts';

// The service and the sandbox bank run without V8's allocation-site pretenuring (docs/performance.md,
// "Pretenuring"), and the bench measures them, and its baselines, with the same flags.

const root = path.resolve(import.meta.dirname, '..');
const FLAG = '--no-allocation-site-pretenuring';

test('npm start, the sandbox bank and the bench run Node without allocation-site pretenuring, and this Node accepts the flag', () => {
  const scripts = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).scripts as Record<string, string>;
  assert.match(scripts.start!, / node --no-allocation-site-pretenuring src\/main\.ts$/);
  assert.match(scripts['sandbox-bank']!, / node --no-allocation-site-pretenuring src\/modules\/banks\/sandbox-bank\/main\.ts$/);
  assert.match(scripts.bench!, /^node --no-allocation-site-pretenuring bench\/run\.ts$/);
  assert.ok(serviceNodeFlags().includes(FLAG), 'the bench starts the service as npm start does');
  assert.deepEqual(runtimeFlagsOfStart(), [FLAG], "the baselines' servers get the same V8 flag, not the service's heap caps");
  // A Node that no longer knows the flag would refuse to start at all (exit 9).
  const ran = spawnSync(process.execPath, [FLAG, '-e', 'process.stdout.write("ok")'], { encoding: 'utf8' });
  assert.equal(ran.status, 0, ran.stderr);
  assert.equal(ran.stdout, 'ok');
});
