import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { isValidZone } from './shared/zone.ts';
import { BanksFileError, readBanksFile } from './modules/banks/banks-file.ts';
import { decodeSecretKey } from './store/secret-key.ts';
import { isLoopbackHost, type Reach } from './shared/network.ts';
import type { Mode } from './shared/mode.ts';
import type { StoreOptions } from './store/store.ts';
import type { LogFormat } from './logger.ts';
import { DEFAULT_ZONE } from './shared/zone.ts';

export type Config = {
  port: number;
  host: string;
  publicBaseUrl: string;
  dataDir: string;
  databaseUrl: string | null;
  /** PostgreSQL connections each process may open (DATABASE_POOL_SIZE). */
  databasePoolSize: number;
  /** Whether hot statements are prepared on the PostgreSQL server (DATABASE_PREPARED_STATEMENTS; off behind a pooler that cannot keep them). */
  databasePreparedStatements: boolean;
  /** Processes `npm start` runs (WEB_CONCURRENCY); more than one only with PostgreSQL. */
  webConcurrency: number;
  smtpUrl: string | null;
  /** The From of every message Tono sends. */
  mailFrom: string;
  /** The most jobs one test clock advance runs (POST /v1/test-helpers/clock/advance). */
  testClockMaxJobs: number;
  /** The most real seconds one test clock advance works before it answers, saying whether work remains. */
  testClockMaxSeconds: number;
  /** Failed authentications (API keys, logins) one client address may make a minute; 0 turns the limit off. */
  authFailuresPerMinute: number;
  sandboxBankUrl: string;
  /** SANDBOX_BANK_URL was given; otherwise the sandbox bank is the one mounted under PUBLIC_BASE_URL. */
  sandboxBankUrlSet?: boolean;
  /**
   * SANDBOX_CLIENT_SECRET: the service's secret at the sandbox bank. Unset, the mounted bank's is
   * made at first start and kept sealed, and a bank at SANDBOX_BANK_URL gets its documented default.
   */
  sandboxClientSecret: string | null;
  logLevel: string;
  /** LOG_FORMAT; null when unset, so the logger follows where stdout goes. */
  logFormat: LogFormat | null;
  /**
   * TRUST_PROXY: which peers' X-Forwarded-For the client address (`request.ip`, which every
   * per-address limit and audit record uses) is taken from. False trusts none; a number trusts that
   * many proxies in front of the service; a list trusts the proxies at those addresses or ranges.
   */
  trustProxy: TrustProxy;
  serviceTimeZone: string;
  workers: boolean;
  demoMerchant: boolean;
  banksFile: string | null;
  /**
   * Where the service may connect for merchants (webhooks, images), per mode. Live reaches global
   * addresses only, test mode also this machine's loopback when the service listens on loopback
   * alone (the laptop start); ALLOW_PRIVATE_TARGETS=true lets both reach any address, =false keeps
   * both global. See docs/security.md.
   */
  targetReach: Record<Mode, Reach>;
  /** API calls a key may make per second (burst twice that); 0 turns the limit off. */
  rateLimitPerSecond: number;
  /** SECRET_KEY decoded; null means the key file under DATA_DIR (SQLite only). */
  secretKey: Buffer | null;
};

export type TrustProxy = false | number | string[];

/** A bad setting; main prints its one-line message and exits without a stack trace. */
export class ConfigError extends Error {}

/** See docs/performance.md, "Several processes on PostgreSQL", for how this was chosen. */
export const DEFAULT_POOL_SIZE = 10;

const logLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function bool(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (/^(true|1|yes|on)$/i.test(raw)) return true;
  if (/^(false|0|no|off)$/i.test(raw)) return false;
  throw new ConfigError(`${name} must be true or false, got ${JSON.stringify(raw)}`);
}

/**
 * A URL setting, without its trailing slashes. `base` is for a URL that paths are appended to (and
 * that goes into emails, QR codes and the bank's redirect_uri): it may have a path prefix, but no
 * user name or password, query or fragment.
 */
function url(name: string, raw: string, protocols: string[], { base = false } = {}): string {
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(`${name} must be a URL, got ${JSON.stringify(raw)}`);
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(`${name} must use ${protocols.join(' or ')}, got ${JSON.stringify(raw)}`);
  }
  if (base) {
    // Not echoed: the value holds the password.
    if (parsed.username || parsed.password || /^[^:]+:\/*[^/?#]*@/.test(raw))
      throw new ConfigError(`${name} must not hold a user name or password`);
    if (raw.includes('?') || raw.includes('#'))
      throw new ConfigError(
        `${name} must have no query (?) or fragment (#): paths are appended to it, got ${JSON.stringify(raw)}`,
      );
  }
  return raw.replace(/\/+$/, '');
}

const trustProxyUsage =
  'TRUST_PROXY must be false, the number of proxies in front of the service (from 1), or a comma-separated list of their IP addresses or CIDR ranges';

/** One address or CIDR range of TRUST_PROXY. */
function isAddressOrRange(entry: string): boolean {
  const [address, prefix, extra] = entry.split('/');
  const family = net.isIP(address ?? '');
  if (family === 0 || extra !== undefined) return false;
  if (prefix === undefined) return true;
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128);
}

/**
 * TRUST_PROXY. Unset or false: the client address is the connection's. `true` is refused: trusting
 * every peer would let any client name its own address in X-Forwarded-For.
 */
function trustProxyOf(raw: string | undefined): TrustProxy {
  if (raw === undefined || raw.trim() === '' || /^(false|no|off)$/i.test(raw.trim())) return false;
  const value = raw.trim();
  if (/^[1-9][0-9]{0,2}$/.test(value)) return Number(value);
  const entries = value.split(',').map((entry) => entry.trim());
  if (!entries.every(isAddressOrRange)) throw new ConfigError(`${trustProxyUsage}, got ${JSON.stringify(raw)}`);
  return entries;
}

function logFormatOf(raw: string | undefined): LogFormat | null {
  if (raw === undefined || raw === '') return null;
  if (raw === 'json' || raw === 'pretty') return raw;
  throw new ConfigError(`LOG_FORMAT must be json or pretty, got ${JSON.stringify(raw)}`);
}

/**
 * DEMO_MERCHANT: an explicit value wins. Unset, the demo merchant (with a working live key, printed
 * to stdout) is made only on the laptop start: SQLite, no live banks, listening on loopback.
 */
function demoMerchantOf(env: NodeJS.ProcessEnv, host: string): boolean {
  const laptop = !env.DATABASE_URL && !env.BANKS_FILE && isLoopbackHost(host);
  return bool(env, 'DEMO_MERCHANT', laptop);
}

function rateLimit(raw: string | undefined): number {
  if (raw === undefined || raw === '') return 100;
  if (!/^\d{1,7}$/.test(raw))
    throw new ConfigError(
      `RATE_LIMIT_PER_SECOND must be a whole number of calls per second (0 turns it off), got ${JSON.stringify(raw)}`,
    );
  return Number(raw);
}

function wholeNumber(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined || raw === '') return fallback;
  if (!/^[1-9][0-9]{0,8}$/.test(raw))
    throw new ConfigError(`${name} must be a whole number from 1, got ${JSON.stringify(raw)}`);
  return Number(raw);
}

/**
 * Where outbound calls (webhooks, merchant images) may go in each mode. An explicit value wins,
 * either name. Left unset, live mode never leaves the global internet (a service bound to loopback
 * behind a reverse proxy is a production set-up too), and test mode may reach this machine only
 * when nothing else can reach the service.
 */
function targetReachOf(env: NodeJS.ProcessEnv, host: string): Record<Mode, Reach> {
  const explicitPrivate = env.ALLOW_PRIVATE_TARGETS
    ? 'ALLOW_PRIVATE_TARGETS'
    : env.WEBHOOK_ALLOW_PRIVATE
      ? 'WEBHOOK_ALLOW_PRIVATE'
      : null;
  return explicitPrivate
    ? bool(env, explicitPrivate, false)
      ? { live: 'any', test: 'any' }
      : { live: 'global', test: 'global' }
    : { live: 'global', test: isLoopbackHost(host) ? 'loopback' : 'global' };
}

/** BANKS_FILE, read once now so that a bad file stops start-up with one line naming it. */
function checkedBanksFile(env: NodeJS.ProcessEnv): string | null {
  const banksFile = env.BANKS_FILE ? path.resolve(env.BANKS_FILE) : null;
  if (banksFile) {
    try {
      readBanksFile(banksFile);
    } catch (error) {
      if (error instanceof BanksFileError) throw new ConfigError(error.message);
      throw error;
    }
  }
  return banksFile;
}

/** SECRET_KEY: required with PostgreSQL (every process must share it); SQLite keeps a key file instead. */
function secretKeyOf(env: NodeJS.ProcessEnv, databaseUrl: string | null): Buffer | null {
  if (env.SECRET_KEY) {
    const secretKey = decodeSecretKey(env.SECRET_KEY);
    // The value itself is never echoed: it is the key to every stored secret.
    if (!secretKey) throw new ConfigError('SECRET_KEY must be the base64 of 32 random bytes (openssl rand -base64 32)');
    return secretKey;
  } else if (databaseUrl) {
    throw new ConfigError(
      'SECRET_KEY is required with DATABASE_URL: set it to the base64 of 32 random bytes (openssl rand -base64 32), the same in every process',
    );
  }
  return null;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const portRaw = env.PORT || '3000';
  const port = Number(portRaw);
  if (!/^\d+$/.test(portRaw) || port > 65535)
    throw new ConfigError(`PORT must be a port number 0-65535, got ${JSON.stringify(portRaw)}`);
  const host = env.HOST || '127.0.0.1';
  if (!/^[A-Za-z0-9.:\-[\]]+$/.test(host))
    throw new ConfigError(`HOST must be a host name or IP address, got ${JSON.stringify(host)}`);
  const urlHost = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  const publicBaseUrl = url(
    'PUBLIC_BASE_URL',
    env.PUBLIC_BASE_URL || `http://${urlHost}:${port}`,
    ['http:', 'https:'],
    {
      base: true,
    },
  );
  const dataDir = path.resolve(env.DATA_DIR || './data');
  const databaseUrl = env.DATABASE_URL ? url('DATABASE_URL', env.DATABASE_URL, ['postgres:', 'postgresql:']) : null;
  const databasePoolSize = wholeNumber('DATABASE_POOL_SIZE', env.DATABASE_POOL_SIZE, DEFAULT_POOL_SIZE);
  const webConcurrency = wholeNumber('WEB_CONCURRENCY', env.WEB_CONCURRENCY, 1);
  // DATA_DIR holds the SQLite file (and outgoing mail); it is created on start when missing.
  if (fs.existsSync(dataDir) && !fs.statSync(dataDir).isDirectory()) {
    throw new ConfigError(`DATA_DIR must be a directory, got ${JSON.stringify(env.DATA_DIR)} which is a file`);
  }
  const smtpUrl = env.SMTP_URL ? url('SMTP_URL', env.SMTP_URL, ['smtp:', 'smtps:']) : null;
  const mailFrom = env.MAIL_FROM || `Tono <no-reply@${new URL(publicBaseUrl).hostname}>`;
  if (!/^[^\r\n<>]*<[^\s@<>]+@[^\s@<>]+>$|^[^\s@<>]+@[^\s@<>]+$/.test(mailFrom)) {
    throw new ConfigError(`MAIL_FROM must be an address, or a name and <address>, got ${JSON.stringify(mailFrom)}`);
  }
  const targetReach = targetReachOf(env, host);
  const testClockMaxJobs = wholeNumber('TEST_CLOCK_MAX_JOBS', env.TEST_CLOCK_MAX_JOBS, 100_000);
  const testClockMaxSeconds = wholeNumber('TEST_CLOCK_MAX_SECONDS', env.TEST_CLOCK_MAX_SECONDS, 20);
  const authFailuresPerMinute =
    env.AUTH_FAILURES_PER_MINUTE === '0'
      ? 0
      : wholeNumber('AUTH_FAILURES_PER_MINUTE', env.AUTH_FAILURES_PER_MINUTE, 30);
  const sandboxBankUrl = url(
    'SANDBOX_BANK_URL',
    env.SANDBOX_BANK_URL || `${publicBaseUrl}/sandbox-bank`,
    ['http:', 'https:'],
    { base: true },
  );
  const logLevel = env.LOG_LEVEL || 'info';
  if (!logLevels.includes(logLevel))
    throw new ConfigError(`LOG_LEVEL must be one of ${logLevels.join(', ')}, got ${JSON.stringify(logLevel)}`);
  const logFormat = logFormatOf(env.LOG_FORMAT);
  const trustProxy = trustProxyOf(env.TRUST_PROXY);
  const serviceTimeZone = env.SERVICE_TIME_ZONE || DEFAULT_ZONE;
  if (!isValidZone(serviceTimeZone))
    throw new ConfigError(
      `SERVICE_TIME_ZONE must be an IANA time zone such as Pacific/Auckland, got ${JSON.stringify(serviceTimeZone)}`,
    );
  const banksFile = checkedBanksFile(env);
  const secretKey = secretKeyOf(env, databaseUrl);
  return {
    port,
    host,
    publicBaseUrl,
    dataDir,
    databaseUrl,
    databasePoolSize,
    databasePreparedStatements: bool(env, 'DATABASE_PREPARED_STATEMENTS', true),
    webConcurrency,
    smtpUrl,
    mailFrom,
    testClockMaxJobs,
    testClockMaxSeconds,
    authFailuresPerMinute,
    sandboxBankUrl,
    sandboxBankUrlSet: Boolean(env.SANDBOX_BANK_URL),
    sandboxClientSecret: env.SANDBOX_CLIENT_SECRET || null,
    logLevel,
    logFormat,
    trustProxy,
    serviceTimeZone,
    workers: bool(env, 'WORKERS', true),
    demoMerchant: demoMerchantOf(env, host),
    banksFile,
    targetReach,
    rateLimitPerSecond: rateLimit(env.RATE_LIMIT_PER_SECOND),
    secretKey,
  };
}

/**
 * The store a configuration names: PostgreSQL at DATABASE_URL, or the SQLite file in DATA_DIR. Here
 * rather than with the runtime, so the admin CLI opens the store without loading the service.
 */
export function storeOptionsFor(config: Config): StoreOptions {
  return config.databaseUrl
    ? {
        engine: 'postgres',
        url: config.databaseUrl,
        poolSize: config.databasePoolSize,
        preparedStatements: config.databasePreparedStatements,
      }
    : { engine: 'sqlite', file: path.join(config.dataDir, 'tono.db') };
}
