import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { wrongWayImports, type CruisedModule } from './support/import-direction.ts';

// The module walls (docs/architecture.md) as dependency-cruiser checks them with the repository's
// .dependency-cruiser.cjs: the source keeps them, and a tree that breaks each wall fails the check.

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const cli = path.join(root, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruise.mjs');
const config = path.join(root, '.dependency-cruiser.cjs');

type Violation = { rule: { name: string }; from: string; to: string };
type Cruise = { modules: CruisedModule[]; summary: { violations: Violation[] } };

async function cruiseAll(cwd: string): Promise<Cruise> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [cli, '--config', config, '--output-type', 'json', 'src'],
    { cwd, maxBuffer: 64 * 1024 * 1024 },
  );
  return JSON.parse(stdout) as Cruise;
}

async function cruise(cwd: string): Promise<Violation[]> {
  return (await cruiseAll(cwd)).summary.violations;
}

/** The imports docs/architecture.md names as pointing up, each with its reason. */
function namedExceptions(): string[] {
  const doc = fs.readFileSync(path.join(root, 'docs', 'architecture.md'), 'utf8');
  const section = doc.split('## Imports that point up')[1]?.split('\n## ')[0] ?? '';
  return [...section.matchAll(/^- `([^`]+ → [^`]+)`/gm)].map((match) => match[1]!).sort();
}

test('the source keeps every module wall, and the imports that point up are the few docs/architecture.md names', async () => {
  const { modules, summary } = await cruiseAll(root);
  assert.deepEqual(
    summary.violations.map((v) => `${v.rule.name}: ${v.from} → ${v.to}`),
    [],
  );
  const named = namedExceptions();
  assert.ok(named.length <= 5, `at most five, each with its reason (${named.length} named)`);
  assert.deepEqual(wrongWayImports(modules), named);
});

test('an import that points up is found: a lower layer reaching up, or two modules using each other', () => {
  const cruised = (edges: Array<[string, string]>): CruisedModule[] =>
    edges.map(([from, to]) => ({ source: from, dependencies: [{ resolved: to }] }));
  assert.deepEqual(
    wrongWayImports(
      cruised([
        ['src/config.ts', 'src/modules/banks/banks.service.ts'],
        ['src/modules/manifest.ts', 'src/modules/checkout/checkout.strategies.ts'],
        ['src/modules/manifest.ts', 'src/modules/requests/requests.tables.ts'],
        ['src/store/store.ts', 'src/shared/ids.ts'],
        ['src/modules/customers/customers.service.ts', 'src/modules/events/events.service.ts'],
        ['src/modules/events/events.builders.ts', 'src/modules/customers/customers.rules.ts'],
        ['src/modules/orders/orders.service.ts', 'src/modules/invoices/invoices.service.ts'],
        ['src/modules/orders/orders.routes.ts', 'src/modules/invoices/invoices.service.ts'],
        ['src/modules/invoices/invoices.service.ts', 'src/modules/orders/orders.service.ts'],
      ]),
    ),
    [
      'src/config.ts → src/modules/banks/banks.service.ts',
      'src/modules/invoices/invoices.service.ts → src/modules/orders/orders.service.ts',
      'src/modules/manifest.ts → src/modules/checkout/checkout.strategies.ts',
    ],
  );
});

test('a tree that breaks each wall fails the check, rule by rule', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tono-walls-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.symlinkSync(path.join(root, 'node_modules'), path.join(dir, 'node_modules'));
  const write = (file: string, text: string) => {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.writeFileSync(path.join(dir, file), text);
  };
  write('src/modules/orders/orders.repo.ts', 'export const findOrder = () => 1;\n');
  write(
    'src/modules/orders/orders.service.ts',
    "import { findInvoice } from '../invoices/invoices.repo.ts';\nexport const order = () => findInvoice();\n",
  );
  write('src/modules/invoices/invoices.repo.ts', 'export const findInvoice = () => 2;\n');
  write(
    'src/modules/invoices/invoices.service.ts',
    "import { total } from './invoices.rules.ts';\nexport const invoice = () => total();\n",
  );
  write(
    'src/modules/invoices/invoices.rules.ts',
    "import { invoice } from './invoices.service.ts';\nexport const total = () => invoice;\n",
  );
  write(
    'src/http/reach-up.ts',
    "import { order } from '../modules/orders/orders.service.ts';\nexport const up = order;\n",
  );
  write('src/modules/orders/dates.ts', "import { DateTime } from 'luxon';\nexport const now = () => DateTime.now();\n");
  write('src/modules/webhooks/webhooks.fanout.ts', 'export const fanOut = () => 3;\n');
  write('src/modules/invoices/invoices.reads.ts', "export { findInvoice } from './invoices.repo.ts';\n");
  write(
    'src/modules/events/events.service.ts',
    "import { fanOut } from '../webhooks/webhooks.fanout.ts';\nexport const emit = () => fanOut();\n",
  );

  write(
    'src/sandbox-bank/bank.ts',
    "import { order } from '../modules/orders/orders.service.ts';\nexport const bank = order;\n",
  );
  write(
    'src/modules/orders/orders.bank.ts',
    "import { bank } from '../../sandbox-bank/bank.ts';\nexport const viaBank = bank;\n",
  );

  const broken = new Set((await cruise(dir)).map((v) => `${v.rule.name}: ${v.from} → ${v.to}`));
  for (const expected of [
    'no-foreign-repo: src/modules/orders/orders.service.ts → src/modules/invoices/invoices.repo.ts',
    'lower-layers-stay-low: src/http/reach-up.ts → src/modules/orders/orders.service.ts',
    'events-know-no-subscriber: src/modules/events/events.service.ts → src/modules/webhooks/webhooks.fanout.ts',
    'no-repo-reexport: src/modules/invoices/invoices.reads.ts → src/modules/invoices/invoices.repo.ts',
    'sandbox-bank-stands-alone: src/sandbox-bank/bank.ts → src/modules/orders/orders.service.ts',
    'sandbox-bank-through-its-manifest: src/modules/orders/orders.bank.ts → src/sandbox-bank/bank.ts',
  ])
    assert.ok(broken.has(expected), `${expected} is reported (got ${[...broken].join('; ')})`);
  assert.ok(
    [...broken].some((v) => v.startsWith('no-circular: src/modules/invoices/')),
    'the circle is reported',
  );
  assert.ok(
    [...broken].some((v) => v.startsWith('luxon-behind-zone: src/modules/orders/dates.ts')),
    'luxon outside zone.ts is reported',
  );
});
