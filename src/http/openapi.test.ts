import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { generateOpenApi, OPENAPI_FILE } from '../../scripts/openapi.ts';

test('the committed OpenAPI document is what the routes generate (run npm run openapi after changing a route)', async () => {
  const generated = await generateOpenApi();
  const committed = fs.existsSync(OPENAPI_FILE) ? fs.readFileSync(OPENAPI_FILE, 'utf8') : '';
  assert.ok(committed === generated, 'docs/openapi.json is stale: run `npm run openapi` and commit it');
});
