import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

// The repository stands alone: code, comments and docs cite its own docs/, never documents that
// live outside it (design notes, a style guide, a product specification).

const root = path.resolve(import.meta.dirname, '..');
const outside = [
  new RegExp(['DESIGN', '(\\.md|\\s+section)'].join('')),
  new RegExp(['STYLE', '\\.md'].join('')),
  new RegExp(['\\bthe', 'spec\\b'].join(' ')),
  new RegExp(['\\bspec', '(section\\s+)?\\d'].join('\\s+')),
];

function files(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory())
      return entry.name === 'node_modules' || entry.name.startsWith('.') || entry.name === 'data' ? [] : files(full);
    return /\.(ts|js|md|json|eta|css)$/.test(entry.name) ? [full] : [];
  });
}

test('no file cites a document from outside the repository', () => {
  const found: string[] = [];
  for (const file of [
    path.join(root, 'README.md'),
    ...['src', 'docs', 'test', 'bench', 'scripts'].flatMap((dir) => files(path.join(root, dir))),
  ]) {
    const lines = fs.readFileSync(file, 'utf8').split('\n');
    lines.forEach((line, i) => {
      if (outside.some((pattern) => pattern.test(line)))
        found.push(`${path.relative(root, file)}:${i + 1}: ${line.trim().slice(0, 120)}`);
    });
  }
  assert.deepEqual(found, []);
});
