import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { processStore, startService, stop } from './process.ts';

// `npm start`, the CLI and the sandbox bank keep Node's compile cache (docs/configuration.md, "Memory and start-up"): the
// service's code, stripped of its types, is written once it listens, so even a start ended by
// SIGKILL leaves it for the next.

const root = path.resolve(import.meta.dirname, '..');

test('npm start, the CLI and the sandbox bank keep the compile cache in node_modules/.cache unless NODE_COMPILE_CACHE names another folder', () => {
  const scripts = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).scripts as Record<
    string,
    string
  >;
  for (const name of ['start', 'cli', 'sandbox-bank']) {
    assert.match(
      scripts[name],
      /^NODE_COMPILE_CACHE=\$\{NODE_COMPILE_CACHE:-node_modules\/\.cache\/tono-compile\} /,
      name,
    );
  }
});

test('a start writes the cache once it listens, even if it is then killed, and the next start reads its code from it', async (t) => {
  const store = await processStore(t);
  const cache = fs.mkdtempSync(path.join(os.tmpdir(), 'tono-compile-'));
  t.after(() => fs.rmSync(cache, { recursive: true, force: true }));
  // Node reports what it reads from the cache with this debug switch.
  const env = { NODE_COMPILE_CACHE: cache, NODE_DEBUG_NATIVE: 'COMPILE_CACHE', DEMO_MERCHANT: 'false' };

  const first = await startService(t, store, env);
  await stop(first, 'SIGKILL');
  const entries = fs.readdirSync(cache, { recursive: true }).length;
  assert.ok(entries > 100, `the cache holds the service's modules (${entries} entries)`);

  const second = await startService(t, store, env);
  await stop(second);
  for (const file of ['src/main.ts', 'src/app.ts', 'src/modules/requests/requests.service.ts']) {
    const read = new RegExp(
      `retrieving transpile cache for StrippedTypeScript file://${path.join(root, file).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\.\\.\\.success`,
    );
    assert.match(second.stderr(), read, `${file} was not stripped of its types again`);
  }
});
