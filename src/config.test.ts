import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError, loadConfig } from './config.ts';
import { runMain } from '../test/process.ts';

test('defaults', () => {
  const config = loadConfig({});
  assert.deepEqual(config, {
    port: 3000,
    host: '127.0.0.1',
    publicBaseUrl: 'http://127.0.0.1:3000',
    dataDir: path.resolve('./data'),
    databaseUrl: null,
    databasePoolSize: 10,
    databasePreparedStatements: true,
    webConcurrency: 1,
    smtpUrl: null,
    mailFrom: 'Tono <no-reply@127.0.0.1>',
    testClockMaxJobs: 100_000,
    testClockMaxSeconds: 20,
    authFailuresPerMinute: 30,
    sandboxBankUrl: 'http://127.0.0.1:3000/sandbox-bank',
    sandboxBankUrlSet: false,
    sandboxClientSecret: null,
    logLevel: 'info',
    logFormat: null,
    trustProxy: false,
    serviceTimeZone: 'Pacific/Auckland',
    workers: true,
    demoMerchant: true,
    banksFile: null,
    targetReach: { live: 'global', test: 'loopback' },
    rateLimitPerSecond: 100,
    secretKey: null,
  });
});

test('every variable is read', () => {
  const banksFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'tono-banks-')), 'banks.json');
  fs.writeFileSync(
    banksFile,
    JSON.stringify([{ id: 'anz', name: 'ANZ', base_url: 'https://anz.example', client_id: 'c', client_secret: 's' }]),
  );
  const config = loadConfig({
    PORT: '8080',
    HOST: '0.0.0.0',
    PUBLIC_BASE_URL: 'https://pay.example.nz/',
    DATA_DIR: '/var/lib/tono',
    DATABASE_URL: 'postgres://u@db:5432/tono',
    SMTP_URL: 'smtp://mail:25',
    SANDBOX_BANK_URL: 'http://sandbox:4000',
    SANDBOX_CLIENT_SECRET: 'their-own-secret',
    LOG_LEVEL: 'debug',
    SERVICE_TIME_ZONE: 'Australia/Sydney',
    WORKERS: 'false',
    DEMO_MERCHANT: 'no',
    BANKS_FILE: banksFile,
    WEBHOOK_ALLOW_PRIVATE: 'yes',
    RATE_LIMIT_PER_SECOND: '0',
    SECRET_KEY: Buffer.alloc(32, 7).toString('base64'),
    MAIL_FROM: 'Kōwhai Pay <pay@kowhai.example>',
    TEST_CLOCK_MAX_JOBS: '500',
    TEST_CLOCK_MAX_SECONDS: '5',
    AUTH_FAILURES_PER_MINUTE: '0',
    WEB_CONCURRENCY: '4',
    DATABASE_POOL_SIZE: '6',
    DATABASE_PREPARED_STATEMENTS: 'false',
    LOG_FORMAT: 'json',
    TRUST_PROXY: '10.0.0.0/8, 2001:db8::1',
  });
  assert.deepEqual(config, {
    port: 8080,
    host: '0.0.0.0',
    publicBaseUrl: 'https://pay.example.nz',
    dataDir: '/var/lib/tono',
    databaseUrl: 'postgres://u@db:5432/tono',
    databasePoolSize: 6,
    databasePreparedStatements: false,
    webConcurrency: 4,
    smtpUrl: 'smtp://mail:25',
    mailFrom: 'Kōwhai Pay <pay@kowhai.example>',
    testClockMaxJobs: 500,
    testClockMaxSeconds: 5,
    authFailuresPerMinute: 0,
    sandboxBankUrl: 'http://sandbox:4000',
    sandboxBankUrlSet: true,
    sandboxClientSecret: 'their-own-secret',
    logLevel: 'debug',
    logFormat: 'json',
    trustProxy: ['10.0.0.0/8', '2001:db8::1'],
    serviceTimeZone: 'Australia/Sydney',
    workers: false,
    demoMerchant: false,
    banksFile,
    targetReach: { live: 'any', test: 'any' },
    rateLimitPerSecond: 0,
    secretKey: Buffer.alloc(32, 7),
  });
  // Outbound reach: live never leaves the global internet unless allowed explicitly; test mode may
  // reach loopback only on a service listening on loopback alone; an explicit value wins, either name.
  const global = { live: 'global', test: 'global' };
  assert.deepEqual(loadConfig({}).targetReach, { live: 'global', test: 'loopback' });
  assert.deepEqual(loadConfig({ HOST: '::1' }).targetReach, { live: 'global', test: 'loopback' });
  assert.deepEqual(loadConfig({ HOST: '0.0.0.0' }).targetReach, global);
  assert.deepEqual(loadConfig({ HOST: '10.1.2.3' }).targetReach, global);
  assert.deepEqual(loadConfig({ HOST: '0.0.0.0', ALLOW_PRIVATE_TARGETS: 'true' }).targetReach, {
    live: 'any',
    test: 'any',
  });
  assert.deepEqual(loadConfig({ ALLOW_PRIVATE_TARGETS: 'false' }).targetReach, global);
  assert.deepEqual(loadConfig({ WEBHOOK_ALLOW_PRIVATE: 'false' }).targetReach, global);
  assert.equal(loadConfig({ HOST: '::1', PORT: '9' }).publicBaseUrl, 'http://[::1]:9');
  assert.equal(loadConfig({ PORT: '' }).port, 3000, 'empty means unset');
  assert.equal(loadConfig({ WORKERS: 'ON' }).workers, true);
});

const dataFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'tono-config-')), 'not-a-dir');
fs.writeFileSync(dataFile, '');

const bad: Array<[name: string, value: string, message: string]> = [
  ['PORT', 'abc', 'PORT must be a port number 0-65535, got "abc"'],
  ['PORT', '70000', 'PORT must be a port number 0-65535, got "70000"'],
  ['PORT', '-1', 'PORT must be a port number 0-65535, got "-1"'],
  ['HOST', 'bad host!', 'HOST must be a host name or IP address, got "bad host!"'],
  ['PUBLIC_BASE_URL', 'notaurl', 'PUBLIC_BASE_URL must be a URL, got "notaurl"'],
  ['PUBLIC_BASE_URL', 'ftp://x.example', 'PUBLIC_BASE_URL must use http: or https:, got "ftp://x.example"'],
  [
    'PUBLIC_BASE_URL',
    'https://pay.example.nz/?utm=x',
    'PUBLIC_BASE_URL must have no query (?) or fragment (#): paths are appended to it, got "https://pay.example.nz/?utm=x"',
  ],
  [
    'PUBLIC_BASE_URL',
    'https://pay.example.nz#top',
    'PUBLIC_BASE_URL must have no query (?) or fragment (#): paths are appended to it, got "https://pay.example.nz#top"',
  ],
  [
    'PUBLIC_BASE_URL',
    'https://pay.example.nz/tono?',
    'PUBLIC_BASE_URL must have no query (?) or fragment (#): paths are appended to it, got "https://pay.example.nz/tono?"',
  ],
  ['PUBLIC_BASE_URL', 'http://ops:hunter2@pay.example.nz/', 'PUBLIC_BASE_URL must not hold a user name or password'],
  ['PUBLIC_BASE_URL', 'http://ops@pay.example.nz', 'PUBLIC_BASE_URL must not hold a user name or password'],
  ['SANDBOX_BANK_URL', 'http://u:p@sandbox:4000', 'SANDBOX_BANK_URL must not hold a user name or password'],
  [
    'SANDBOX_BANK_URL',
    'http://sandbox:4000/?x=1',
    'SANDBOX_BANK_URL must have no query (?) or fragment (#): paths are appended to it, got "http://sandbox:4000/?x=1"',
  ],
  ['DATA_DIR', dataFile, `DATA_DIR must be a directory, got ${JSON.stringify(dataFile)} which is a file`],
  ['DATABASE_URL', 'mysql://x', 'DATABASE_URL must use postgres: or postgresql:, got "mysql://x"'],
  ['DATABASE_URL', 'not a url', 'DATABASE_URL must be a URL, got "not a url"'],
  ['SMTP_URL', 'http://mail', 'SMTP_URL must use smtp: or smtps:, got "http://mail"'],
  ['SANDBOX_BANK_URL', '::', 'SANDBOX_BANK_URL must be a URL, got "::"'],
  ['LOG_LEVEL', 'loud', 'LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "loud"'],
  ['LOG_FORMAT', 'JSON', 'LOG_FORMAT must be json or pretty, got "JSON"'],
  ['LOG_FORMAT', 'text', 'LOG_FORMAT must be json or pretty, got "text"'],
  ...['true', '0', '-1', '1.5', '10.0.0.0/33', '10.0.0.300', 'proxy.internal', '10.0.0.1,', 'loopback'].map(
    (value): [string, string, string] => [
      'TRUST_PROXY',
      value,
      `TRUST_PROXY must be false, the number of proxies in front of the service (from 1), or a comma-separated list of their IP addresses or CIDR ranges, got ${JSON.stringify(value)}`,
    ],
  ),
  [
    'SERVICE_TIME_ZONE',
    'Mars/Base',
    'SERVICE_TIME_ZONE must be an IANA time zone such as Pacific/Auckland, got "Mars/Base"',
  ],
  ['WORKERS', 'maybe', 'WORKERS must be true or false, got "maybe"'],
  ['DEMO_MERCHANT', '2', 'DEMO_MERCHANT must be true or false, got "2"'],
  ['WEBHOOK_ALLOW_PRIVATE', 'sometimes', 'WEBHOOK_ALLOW_PRIVATE must be true or false, got "sometimes"'],
  ['ALLOW_PRIVATE_TARGETS', 'sometimes', 'ALLOW_PRIVATE_TARGETS must be true or false, got "sometimes"'],
  ['MAIL_FROM', 'not an address', 'MAIL_FROM must be an address, or a name and <address>, got "not an address"'],
  ['WEB_CONCURRENCY', '0', 'WEB_CONCURRENCY must be a whole number from 1, got "0"'],
  ['WEB_CONCURRENCY', 'two', 'WEB_CONCURRENCY must be a whole number from 1, got "two"'],
  ['WEB_CONCURRENCY', '1.5', 'WEB_CONCURRENCY must be a whole number from 1, got "1.5"'],
  ['WEB_CONCURRENCY', '-2', 'WEB_CONCURRENCY must be a whole number from 1, got "-2"'],
  ['DATABASE_POOL_SIZE', '0', 'DATABASE_POOL_SIZE must be a whole number from 1, got "0"'],
  ['DATABASE_PREPARED_STATEMENTS', 'sometimes', 'DATABASE_PREPARED_STATEMENTS must be true or false, got "sometimes"'],
  ['TEST_CLOCK_MAX_JOBS', '0', 'TEST_CLOCK_MAX_JOBS must be a whole number from 1, got "0"'],
  ['TEST_CLOCK_MAX_SECONDS', '1.5', 'TEST_CLOCK_MAX_SECONDS must be a whole number from 1, got "1.5"'],
  ['AUTH_FAILURES_PER_MINUTE', 'many', 'AUTH_FAILURES_PER_MINUTE must be a whole number from 1, got "many"'],
  [
    'RATE_LIMIT_PER_SECOND',
    'fast',
    'RATE_LIMIT_PER_SECOND must be a whole number of calls per second (0 turns it off), got "fast"',
  ],
  ['SECRET_KEY', 'hunter2', 'SECRET_KEY must be the base64 of 32 random bytes (openssl rand -base64 32)'],
  [
    'SECRET_KEY',
    Buffer.alloc(16, 1).toString('base64'),
    'SECRET_KEY must be the base64 of 32 random bytes (openssl rand -base64 32)',
  ],
];

test('PUBLIC_BASE_URL may have a path prefix and trailing slashes; PostgreSQL and SMTP URLs keep their credentials and query', () => {
  const prefixed = loadConfig({ PUBLIC_BASE_URL: 'https://example.nz/pay-service/' });
  assert.equal(prefixed.publicBaseUrl, 'https://example.nz/pay-service');
  assert.equal(prefixed.sandboxBankUrl, 'https://example.nz/pay-service/sandbox-bank');
  assert.equal(loadConfig({ PUBLIC_BASE_URL: 'https://example.nz//' }).publicBaseUrl, 'https://example.nz');
  const secretKey = Buffer.alloc(32, 1).toString('base64');
  assert.equal(
    loadConfig({ DATABASE_URL: 'postgres://u:pw@db/tono?sslmode=require', SECRET_KEY: secretKey }).databaseUrl,
    'postgres://u:pw@db/tono?sslmode=require',
  );
  assert.equal(loadConfig({ SMTP_URL: 'smtp://u:pw@mail:587' }).smtpUrl, 'smtp://u:pw@mail:587');
  assert.throws(
    () => loadConfig({ PUBLIC_BASE_URL: 'https://ops:hunter2@example.nz' }),
    (error: unknown) => error instanceof ConfigError && !error.message.includes('hunter2'),
    'the password is not repeated',
  );
});

test('the demo merchant is made by default only on the laptop start; DEMO_MERCHANT says otherwise', () => {
  const secretKey = Buffer.alloc(32, 1).toString('base64');
  const banksFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'tono-banks-')), 'banks.json');
  fs.writeFileSync(
    banksFile,
    JSON.stringify([{ id: 'anz', name: 'ANZ', base_url: 'https://anz.example', client_id: 'c', client_secret: 's' }]),
  );
  const postgres = { DATABASE_URL: 'postgres://u@db/tono', SECRET_KEY: secretKey };
  assert.equal(loadConfig({}).demoMerchant, true);
  assert.equal(loadConfig({ HOST: 'localhost' }).demoMerchant, true);
  assert.equal(loadConfig({ HOST: '::1' }).demoMerchant, true);
  assert.equal(loadConfig(postgres).demoMerchant, false);
  assert.equal(loadConfig({ BANKS_FILE: banksFile }).demoMerchant, false);
  assert.equal(loadConfig({ HOST: '0.0.0.0' }).demoMerchant, false);
  assert.equal(loadConfig({ HOST: '10.1.2.3' }).demoMerchant, false);
  assert.equal(loadConfig({ ...postgres, DEMO_MERCHANT: 'true' }).demoMerchant, true);
  assert.equal(loadConfig({ HOST: '0.0.0.0', BANKS_FILE: banksFile, DEMO_MERCHANT: 'yes' }).demoMerchant, true);
  assert.equal(loadConfig({ DEMO_MERCHANT: 'false' }).demoMerchant, false);
});

test('TRUST_PROXY: unset or false trusts no proxy; a hop count; or a list of addresses and ranges', () => {
  assert.equal(loadConfig({}).trustProxy, false);
  assert.equal(loadConfig({ TRUST_PROXY: '' }).trustProxy, false);
  assert.equal(loadConfig({ TRUST_PROXY: 'false' }).trustProxy, false);
  assert.equal(loadConfig({ TRUST_PROXY: '1' }).trustProxy, 1);
  assert.equal(loadConfig({ TRUST_PROXY: '2' }).trustProxy, 2);
  assert.deepEqual(loadConfig({ TRUST_PROXY: '127.0.0.1' }).trustProxy, ['127.0.0.1']);
  assert.deepEqual(loadConfig({ TRUST_PROXY: '10.0.0.0/8,::1 , fd00::/8' }).trustProxy, [
    '10.0.0.0/8',
    '::1',
    'fd00::/8',
  ]);
});

test('PostgreSQL needs SECRET_KEY, which no error message repeats', () => {
  assert.throws(
    () => loadConfig({ DATABASE_URL: 'postgres://u@db/tono' }),
    (error: unknown) =>
      error instanceof ConfigError &&
      error.message ===
        'SECRET_KEY is required with DATABASE_URL: set it to the base64 of 32 random bytes (openssl rand -base64 32), the same in every process',
  );
  const almost = Buffer.alloc(31, 9).toString('base64');
  assert.throws(
    () => loadConfig({ SECRET_KEY: almost }),
    (error: unknown) => error instanceof ConfigError && !error.message.includes(almost),
  );
  assert.deepEqual(
    loadConfig({ SECRET_KEY: ` ${Buffer.alloc(32, 3).toString('base64')}\n` }).secretKey,
    Buffer.alloc(32, 3),
    'surrounding space is ignored',
  );
});

test('loadConfig refuses each bad value with a message naming the variable', () => {
  for (const [name, value, message] of bad) {
    assert.throws(
      () => loadConfig({ [name]: value }),
      (error: unknown) => error instanceof ConfigError && error.message === message,
      `${name}=${value}`,
    );
  }
});

// Every bad value is refused by loadConfig above; a start turns any refusal into its one line, so
// one value of each kind of check is started as a process (each start loads the whole service).
const startedWith = new Set([
  'PORT',
  'PUBLIC_BASE_URL',
  'DATA_DIR',
  'DATABASE_URL',
  'WORKERS',
  'WEB_CONCURRENCY',
  'SECRET_KEY',
  'LOG_FORMAT',
]);

test('the service refuses to start on a bad value: one stderr line naming the variable, no stack trace', async (t) => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tono-config-'));
  t.after(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const firstOfEach = bad.filter(
    ([name], i) => startedWith.has(name) && bad.findIndex(([other]) => other === name) === i,
  );
  assert.equal(firstOfEach.length, startedWith.size);
  for (const [name, value, message] of firstOfEach) {
    await t.test(`${name}=${value}`, () => {
      const result = runMain({ DATA_DIR: dataDir, PORT: '0', [name]: value });
      assert.notEqual(result.status, 0);
      assert.equal(result.signal, null);
      assert.equal(result.stderr, `tono: ${message}\n`);
      assert.equal(result.stdout, '');
    });
  }
  assert.deepEqual(fs.readdirSync(dataDir), [], 'nothing was created');
});

test('an unreachable database stops the start with one line', () => {
  const result = runMain({ DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none', PORT: '0' });
  assert.notEqual(result.status, 0);
  assert.match(result.stderr, /^tono: could not open the database: .+\n$/);
  assert.doesNotMatch(result.stderr, /\n\s+at /);
});
