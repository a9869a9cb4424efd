import type { Migration } from 'kysely';
import * as sandboxBank from './0004-sandbox-bank.ts';
import * as sandboxUsage from './0009-sandbox-usage.ts';
import * as sandboxAccountHolders from './0031-sandbox-account-holders.ts';
import * as sandboxRefreshTokens from './0050-sandbox-refresh-tokens.ts';

// The sandbox bank's tables (sandbox_*). Mounted in the service, it shares the service's database,
// so the service's migrations include these under the same names (src/store/migrations/index.ts);
// run alone, the bank migrates its own database with them only (migrateSandboxBank).
export const sandboxBankMigrations: Record<string, Migration> = {
  '0004-sandbox-bank': sandboxBank,
  '0009-sandbox-usage': sandboxUsage,
  '0031-sandbox-account-holders': sandboxAccountHolders,
  '0050-sandbox-refresh-tokens': sandboxRefreshTokens,
};
