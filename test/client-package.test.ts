import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { merchantByCli, processStore, startService } from './process.ts';

// @tono/client as a merchant gets it: `npm pack`, installed from the tarball into a project of
// their own, type-checked there, and run against a real service on a real port.

const root = path.resolve(import.meta.dirname, '..');
const packageDir = path.join(root, 'packages/client');

test('the generated types are current', () => {
  const generated = spawnSync(
    process.execPath,
    [
      path.join(packageDir, 'node_modules/openapi-typescript/bin/cli.js'),
      '../../docs/openapi.json',
      '--default-non-nullable=false',
    ],
    { cwd: packageDir, encoding: 'utf8' },
  );
  assert.equal(generated.status, 0, generated.stderr);
  const committed = fs.readFileSync(path.join(packageDir, 'src/schema.d.ts'), 'utf8');
  assert.ok(
    generated.stdout.trim() === committed.trim(),
    'packages/client/src/schema.d.ts is stale: run `npm run generate -w @tono/client`',
  );
});

test("the service signs with the package's webhook code, the one copy of it", async () => {
  const service = await import('tono/webhooks');
  const client = await import('@tono/client/webhooks');
  assert.deepEqual(Object.keys(service).sort(), [
    'DEFAULT_TOLERANCE_SECONDS',
    'signStandardWebhook',
    'signWebhookBody',
    'verifyStandardWebhook',
    'verifyWebhookSignature',
  ]);
  // the same functions, not equal copies: one implementation, in the package merchants install
  for (const [name, value] of Object.entries(service))
    assert.equal(value, client[name as keyof typeof client], `tono/webhooks ${name} is @tono/client's`);
  assert.doesNotMatch(
    fs.readFileSync(path.join(root, 'src/modules/webhooks/verify.js'), 'utf8'),
    /createHmac|node:crypto/,
    'src/modules/webhooks/verify.js re-exports, it does not sign',
  );
});

const merchantProgram = `
import http from 'node:http';
import { createTonoClient, unwrap, TonoError, type ErrorCodeOf, type Receipt, type Refund, type StatementLine } from '@tono/client';
import {
  parseWebhook,
  signStandardWebhook,
  verifyStandardWebhook,
  verifyWebhookSignature,
  WebhookVerificationError,
  type TonoEvent,
} from '@tono/client/webhooks';

const [baseUrl, apiKey, bankAccountId] = process.argv.slice(2) as [string, string, string];
const tono = createTonoClient({ baseUrl, apiKey });

let resolveDelivery: (delivery: { raw: Buffer; headers: http.IncomingHttpHeaders }) => void = () => {};
const delivered = new Promise<{ raw: Buffer; headers: http.IncomingHttpHeaders }>((resolve) => (resolveDelivery = resolve));
const receiver = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk)).on('end', () => {
    res.writeHead(204).end();
    resolveDelivery({ raw: Buffer.concat(chunks), headers: req.headers });
  });
});
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const port = (receiver.address() as { port: number }).port;

const { webhook } = await unwrap(tono.POST('/v1/webhooks', { body: { url: \`http://localhost:\${port}/hooks\`, events: ['request.created'] } }));
const secret: string = webhook.secret!;
const { request } = await unwrap(tono.POST('/v1/requests', { body: { bank_account_id: bankAccountId, amount: '12.50 NZD', message: 'From the typed client' } }));
const status: 'active' | 'paid' | 'expired' | 'deleted' = request.status;
// every object the API returns has its name in the package, as the list calls type it
const refunds: Refund[] = (await unwrap(tono.GET('/v1/refunds', {}))).refunds;
const receipts: Receipt[] = (await unwrap(tono.GET('/v1/receipts', {}))).receipts;
const lines: StatementLine[] = (await unwrap(tono.GET('/v1/statement-lines', {}))).statement_lines;
void [refunds, receipts, lines];

const missing = tono.GET('/v1/requests/{id}', { params: { path: { id: 'request_01JD2Q8Z7M3V4K5N6P7R8S9T0V' } } });
const { error } = await missing;
const code: ErrorCodeOf<Awaited<typeof missing>> | undefined = error?.code as ErrorCodeOf<Awaited<typeof missing>> | undefined;
let thrown: string | undefined;
try {
  await unwrap(missing);
} catch (caught) {
  if (caught instanceof TonoError) thrown = \`\${caught.status} \${caught.code}\`;
}

// @ts-expect-error amount is a string like "12.50 NZD"
void tono.POST('/v1/requests', { body: { bank_account_id: bankAccountId, amount: 1250, message: 'wrong' } });

const delivery = await delivered;
receiver.close();
const event: TonoEvent = parseWebhook(delivery.raw, delivery.headers, secret);
let createdRequestId: string | null = null;
if (event.type === 'request.created') {
  createdRequestId = event.data.id;
  // @ts-expect-error only recurring_payment.authorised carries a token
  void event.data.token;
}
let tamperedRefused = false;
try {
  parseWebhook(Buffer.concat([delivery.raw, Buffer.from(' ')]), delivery.headers, secret);
} catch (caught) {
  tamperedRefused = caught instanceof WebhookVerificationError;
}
const { 'webhook-signature': _standard, ...tonoHeadersOnly } = delivery.headers;
const viaTonoSignature = parseWebhook(delivery.raw, tonoHeadersOnly, secret).id === event.id;
// as docs/webhooks.md writes it: Node types the header string | string[] | undefined
const headerAsNodeTypesIt = verifyWebhookSignature(delivery.raw, delivery.headers['x-service-signature'], secret);
// a fixture for the merchant's own tests, signed as Tono signs
const fixture = Buffer.from('{"id":"event_test"}');
const timestamp = Math.floor(Date.now() / 1000);
const fixtureVerifies = verifyStandardWebhook(
  fixture,
  {
    'webhook-id': 'event_test',
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signStandardWebhook(fixture, 'event_test', timestamp, secret),
  },
  secret,
);
console.log(JSON.stringify({ requestId: request.id, status, code, thrown, eventType: event.type, createdRequestId, tamperedRefused, viaTonoSignature, headerAsNodeTypesIt, fixtureVerifies }));
`;

test('a merchant project installs the packed client, type-checks against it, and uses it on a running service', async (t) => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'tono-merchant-'));
  t.after(() => fs.rmSync(work, { recursive: true, force: true }));
  const npm = (args: string[], cwd: string) => {
    const result = spawnSync('npm', args, {
      cwd,
      encoding: 'utf8',
      timeout: 180_000,
      env: { ...process.env, npm_config_loglevel: 'error', npm_config_fund: 'false', npm_config_audit: 'false' },
    });
    assert.equal(result.status, 0, `npm ${args.join(' ')}: ${result.stderr}`);
    return result.stdout;
  };
  const packed = JSON.parse(npm(['pack', '--json', '--pack-destination', work], packageDir))[0];
  assert.deepEqual(packed.files.map((f: { path: string }) => f.path).sort(), [
    'README.md',
    'package.json',
    'src/index.d.ts',
    'src/index.js',
    'src/schema.d.ts',
    'src/verify.d.ts',
    'src/verify.js',
    'src/webhooks.d.ts',
    'src/webhooks.js',
  ]);

  const project = path.join(work, 'merchant');
  fs.mkdirSync(project);
  fs.writeFileSync(
    path.join(project, 'package.json'),
    JSON.stringify({ name: 'merchant-shop', private: true, type: 'module' }),
  );
  npm(['install', '--prefer-offline', '--no-package-lock', path.join(work, packed.filename)], project);
  assert.ok(fs.existsSync(path.join(project, 'node_modules/@tono/client/src/index.js')));
  assert.ok(fs.existsSync(path.join(project, 'node_modules/openapi-fetch')), 'its one dependency comes along');

  fs.writeFileSync(path.join(project, 'shop.ts'), merchantProgram);
  fs.writeFileSync(
    path.join(project, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'es2024',
        module: 'nodenext',
        moduleResolution: 'nodenext',
        strict: true,
        noEmit: true,
        skipLibCheck: false,
        allowImportingTsExtensions: true,
        verbatimModuleSyntax: true,
        types: ['node'],
        typeRoots: [path.join(root, 'node_modules/@types')],
      },
      files: ['shop.ts'],
    }),
  );
  const typecheck = spawnSync(
    process.execPath,
    [path.join(root, 'node_modules/typescript/lib/tsc.js'), '-p', project],
    { cwd: project, encoding: 'utf8' },
  );
  assert.equal(
    typecheck.status,
    0,
    `the merchant's code type-checks against the package: ${typecheck.stdout}${typecheck.stderr}`,
  );

  const store = await processStore(t, { migrated: true });
  const service = await startService(t, store);
  const { test_key: testKey, bank_account_id: bankAccountId } = await merchantByCli(
    store,
    'Typed Shop',
    'typed@shop.example',
  );

  const run = spawnSync(process.execPath, ['shop.ts', service.baseUrl, testKey, bankAccountId], {
    cwd: project,
    encoding: 'utf8',
    timeout: 60_000,
  });
  assert.equal(run.status, 0, run.stderr);
  const result = JSON.parse(run.stdout.trim().split('\n').at(-1)!);
  assert.match(result.requestId, /^request_/);
  assert.deepEqual(
    { ...result, requestId: undefined },
    {
      requestId: undefined,
      status: 'active',
      code: 'not_found.request',
      thrown: '404 not_found.request',
      eventType: 'request.created',
      createdRequestId: result.requestId,
      tamperedRefused: true,
      viaTonoSignature: true,
      headerAsNodeTypesIt: true,
      fixtureVerifies: true,
    },
  );
});
