import { systemClock } from '../../shared/time.ts';
import {
  addBankAccount,
  createApiKey,
  createMerchant,
  findMerchantByEmail,
  isRollPeriod,
  revokeApiKey,
  rollApiKeyById,
  ROLL_PERIODS,
  setMerchantPassword,
} from '../../modules/merchants/merchants.service.ts';
import { endSessionsOfMerchant } from '../../modules/dashboard/dashboard.sessions.ts';
import { randomSecret } from '../../shared/crypto.ts';
import {
  describeRestriction,
  FULL_ACCESS,
  parsePermissions,
  type KeyRestriction,
} from '../../modules/merchants/key-scopes.rules.ts';
import type { CliCommand } from '../command.ts';
import { operator, print, withDb } from './open.ts';

async function merchantId(db: Parameters<Parameters<typeof withDb>[1]>[0], who: string): Promise<string> {
  if (who.startsWith('user_')) return who;
  const merchant = await findMerchantByEmail(db, who);
  if (!merchant) throw new Error(`no merchant with email ${who}`);
  return merchant.id;
}

export const merchantCommands: Record<string, CliCommand> = {
  'merchant create': {
    usage: '--name N --email E [--password P] [--bank-account 12-3456-7890138-00] [--json]',
    options: {
      name: { type: 'string' },
      email: { type: 'string' },
      password: { type: 'string' },
      'bank-account': { type: 'string' },
      json: { type: 'boolean' },
    },
    async run(config, o) {
      if (!o.name || !o.email) throw new Error('merchant create needs --name and --email');
      const created = await withDb(config, (db) =>
        createMerchant(
          db,
          systemClock,
          {
            name: o.name,
            email: o.email,
            password: o.password,
            bankAccount: o['bank-account'],
            createdBy: 'operator',
          },
          operator(),
        ),
      );
      // The operator's own password is never echoed; a generated one is shown this once.
      const { dashboard_password: generated, ...shown } = created;
      print(
        o.password ? shown : created,
        o.json,
        [
          `merchant      ${created.user_id}`,
          `live key      ${created.live_key}`,
          `test key      ${created.test_key}`,
          `bank account  ${created.bank_account_id ?? '(none: add one with bank-accounts add)'}`,
          `dashboard     ${o.email} / ${o.password ? '(the password you gave)' : `${generated} (generated; shown once)`}`,
        ].join('\n'),
      );
      return 0;
    },
  },
  'merchant set-password': {
    usage: 'user_…|EMAIL [--password-stdin] [--json]',
    options: { 'password-stdin': { type: 'boolean' }, json: { type: 'boolean' } },
    async run(config, o, positionals) {
      if (!positionals[0]) throw new Error('merchant set-password needs the merchant (user_… or email)');
      // Read from stdin rather than an argument, which other users of the machine can see in the process list.
      const given = o['password-stdin'] ? (await readStdin()).replace(/\r?\n$/, '') : null;
      const password = given ?? randomSecret(12);
      const done = await withDb(config, async (db) => {
        const user = await setMerchantPassword(db, systemClock, positionals[0], password, operator());
        // A new password signs every dashboard session out, as a reset does.
        await endSessionsOfMerchant(db, systemClock.now(), user.id);
        return user;
      });
      const shown = given ? { id: done.id, password_set: true } : { id: done.id, password_set: true, password };
      print(
        shown,
        o.json,
        given
          ? `password set for ${done.id}; its dashboard sessions are ended`
          : `password set for ${done.id}: ${password} (generated; shown once); its dashboard sessions are ended`,
      );
      return 0;
    },
  },
  'keys create': {
    usage:
      '--merchant user_…|EMAIL --mode live|test --name N [--read-only | --allow requests:write,refunds:read,…] [--json]',
    options: {
      merchant: { type: 'string' },
      mode: { type: 'string' },
      name: { type: 'string' },
      'read-only': { type: 'boolean' },
      allow: { type: 'string' },
      json: { type: 'boolean' },
    },
    async run(config, o) {
      if (!o.merchant || (o.mode !== 'live' && o.mode !== 'test'))
        throw new Error('keys create needs --merchant and --mode live|test');
      if (!o.name?.trim())
        throw new Error('keys create needs --name: say what uses the key, e.g. --name "Shop server"');
      const restriction = restrictionOfOptions(o['read-only'], o.allow);
      const mode = o.mode;
      const key = await withDb(config, async (db) =>
        createApiKey(
          db,
          systemClock,
          await merchantId(db, o.merchant),
          mode,
          { name: o.name, createdBy: 'operator', restriction },
          operator(),
        ),
      );
      const access = describeRestriction(restriction);
      print(
        { id: key.id, key: key.key, mode: key.mode, name: key.name, access },
        o.json,
        `${key.key}  (id ${key.id}; ${key.name}; ${access}; shown once)`,
      );
      return 0;
    },
  },
  'keys roll': {
    usage: 'KEY_ID --period now|1h|24h|3d|7d [--json]',
    options: { period: { type: 'string' }, json: { type: 'boolean' } },
    async run(config, o, positionals) {
      if (!positionals[0]) throw new Error('keys roll needs a key id (key_…)');
      if (!isRollPeriod(o.period))
        throw new Error(
          `keys roll needs --period, how long the old key keeps working: ${Object.keys(ROLL_PERIODS).join(', ')}`,
        );
      const period = o.period;
      const rolled = await withDb(config, (db) => rollApiKeyById(db, systemClock, positionals[0], period, operator()));
      const stops = new Date(rolled.old.stopsAt).toISOString();
      print(
        {
          id: rolled.created.id,
          key: rolled.created.key,
          name: rolled.created.name,
          old: { id: rolled.old.id, stops_at: stops },
        },
        o.json,
        `${rolled.created.key}  (id ${rolled.created.id}; ${rolled.created.name}; shown once)\nthe old key ${rolled.old.id} stops at ${stops}`,
      );
      return 0;
    },
  },
  'keys revoke': {
    usage: 'KEY_ID|KEY [--json]',
    options: { json: { type: 'boolean' } },
    async run(config, o, positionals) {
      if (!positionals[0]) throw new Error('keys revoke needs a key id (key_…) or the key itself');
      const revoked = await withDb(config, (db) => revokeApiKey(db, systemClock, positionals[0], operator()));
      print({ id: revoked.id, revoked: true }, o.json, `revoked ${revoked.id}`);
      return 0;
    },
  },
  'bank-accounts add': {
    usage: '--merchant user_…|EMAIL --number 12-3456-7890138-00 [--name N] [--json]',
    options: {
      merchant: { type: 'string' },
      number: { type: 'string' },
      name: { type: 'string' },
      json: { type: 'boolean' },
    },
    async run(config, o) {
      if (!o.merchant || !o.number) throw new Error('bank-accounts add needs --merchant and --number');
      const account = await withDb(config, async (db) =>
        addBankAccount(db, systemClock, await merchantId(db, o.merchant), o.number, o.name, operator()),
      );
      print(
        { id: account.id, account_number: account.account_number },
        o.json,
        `${account.id}  ${account.account_number}`,
      );
      return 0;
    },
  },
};

/** --read-only, --allow LIST, or neither (a full key); both at once is a mistake. */
function restrictionOfOptions(readOnly: boolean | undefined, allow: string | undefined): KeyRestriction {
  if (readOnly && allow !== undefined) throw new Error('give --read-only or --allow, not both');
  if (readOnly) return { kind: 'read_only' };
  if (allow === undefined) return FULL_ACCESS;
  const permissions = parsePermissions(allow);
  if (!Array.isArray(permissions)) throw new Error(`--allow: ${permissions.error}`);
  return { kind: 'limited', permissions };
}

export async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
