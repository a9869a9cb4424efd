import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { IdPrefix } from '../shared/ids.ts';
import { statusForCode } from '../shared/errors.ts';

// docs/api-conventions.md held to the code: its error table to the codes the API answers (as the
// OpenAPI document lists them per operation) and to the codes the source still makes, and its
// identifiers to the id types the service issues (src/shared/ids.ts).

const root = path.resolve(import.meta.dirname, '../..');
const doc = fs.readFileSync(path.join(root, 'docs/api-conventions.md'), 'utf8');

function section(title: string): string {
  const start = doc.indexOf(`\n## ${title}\n`);
  assert.ok(start >= 0, `docs/api-conventions.md has "## ${title}"`);
  const end = doc.indexOf('\n## ', start + 1);
  return doc.slice(start, end < 0 ? undefined : end);
}

type Row = { status: number; code: string };

/** The rows of the error table: `| 409 | \`conflict.invalid_state\` | … |`. */
function errorTable(): Row[] {
  return [...section('Errors').matchAll(/^\| (\d{3}) \| `([^`]+)` \|/gm)].map((m) => ({
    status: Number(m[1]),
    code: m[2]!,
  }));
}

/** A documented code as a pattern: `not_found.<type>` covers `not_found.request`. */
const patternOf = (code: string) => new RegExp(`^${code.replace(/[.]/g, '\\.').replace(/<[a-z]+>/g, '.+')}$`);

/** Every code the OpenAPI document lists in an operation's error responses. */
function codesOfTheApi(): Set<string> {
  const openapi = JSON.parse(fs.readFileSync(path.join(root, 'docs/openapi.json'), 'utf8'));
  const codes = new Set<string>();
  for (const operations of Object.values(openapi.paths) as Array<Record<string, any>>) {
    for (const operation of Object.values(operations)) {
      for (const [status, response] of Object.entries(operation?.responses ?? {}) as Array<[string, any]>) {
        if (Number(status) < 400) continue;
        const parts = response.content?.['application/json']?.schema?.allOf ?? [];
        for (const part of parts) {
          const code = part?.properties?.code;
          for (const choice of code?.anyOf ?? [code]) {
            for (const value of choice?.enum ?? []) codes.add(value);
            // an open code (`bad_request.unknown_param.<field>`) is described by its pattern
            const open = /^([a-z_.]+<[a-z]+>[a-z_.<>]*):/.exec(choice?.description ?? '')?.[1];
            if (open) codes.add(open);
          }
        }
      }
    }
  }
  return codes;
}

/** The service's source, tests left out. */
function source(): string {
  const files = (dir: string): string[] =>
    fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) return files(full);
      return /\.(ts|js)$/.test(entry.name) && !/\.test\.ts$/.test(entry.name) ? [full] : [];
    });
  return files(path.join(root, 'src'))
    .map((file) => fs.readFileSync(file, 'utf8'))
    .join('\n');
}

test('the error table of docs/api-conventions.md has every code the API answers, at its status', () => {
  const rows = errorTable();
  assert.ok(rows.length > 20, `${rows.length} rows read`);
  for (const row of rows) assert.equal(row.status, statusForCode(row.code), `${row.code} is answered with its status`);
  const documented = rows.map((row) => patternOf(row.code));
  const api = codesOfTheApi();
  assert.ok(
    api.has('bad_request.empty_update') && api.has('conflict.already_matched'),
    'codes read from the OpenAPI document',
  );
  const missing = [...api].filter((code) => !documented.some((pattern) => pattern.test(code)));
  assert.deepEqual(missing, [], 'codes the API answers that the table of docs/api-conventions.md lacks');
});

test('every code of the error table is still made by the service', () => {
  const code = source();
  const gone = errorTable()
    .map((row) => row.code)
    .filter((documented) => {
      const fixed = documented.split('<')[0]!;
      // a whole code in quotes, or an open code's fixed start before its placeholder (`not_found.${type}`)
      return fixed === documented
        ? !code.includes(`'${fixed}'`) && !code.includes(`"${fixed}"`)
        : ![`'${fixed}`, `\`${fixed}`, `"${fixed}`].some((start) => code.includes(start));
    });
  assert.deepEqual(gone, [], 'codes docs/api-conventions.md lists that no source file makes');
});

test('the identifiers of docs/api-conventions.md are every id type the service issues', () => {
  const identifiers = section('Identifiers');
  const listed = [
    ...[...identifiers.matchAll(/^\| `([a-z]+)` \|/gm)].map((m) => m[1]!),
    ...[...(identifiers.match(/which no API object shows:([\s\S]*?)\.\n/)?.[1] ?? '').matchAll(/`([a-z]+)`/g)].map(
      (m) => m[1]!,
    ),
  ];
  assert.equal(new Set(listed).size, listed.length, `each type once: ${listed.join(', ')}`);
  assert.deepEqual([...listed].sort(), Object.values(IdPrefix).sort());
});

test("the OpenAPI Error schema's description gives the status of every kind of code the error table has", () => {
  const openapi = JSON.parse(fs.readFileSync(path.join(root, 'docs/openapi.json'), 'utf8'));
  const description: string = openapi.components.schemas.Error.description;
  const kinds = new Map(errorTable().map((row) => [row.code.split('.')[0]!, row.status]));
  for (const [kind, status] of kinds) assert.match(description, new RegExp(`\\b${kind} ${status}\\b`), kind);
});
