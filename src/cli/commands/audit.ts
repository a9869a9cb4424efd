import { verifyChains } from '../../modules/audit/audit.service.ts';
import type { CliCommand } from '../command.ts';
import { print, withDb } from './open.ts';

// Checks the audit trail's hash chains (docs/audit.md, "Verifying").

export const auditCommands: Record<string, CliCommand> = {
  'audit verify': {
    usage:
      '[--merchant user_…] [--json]   walk each merchant’s audit chain; exits 1 naming the first altered, removed or inserted record',
    options: { merchant: { type: 'string' }, json: { type: 'boolean' } },
    async run(config, o) {
      if (o.merchant !== undefined && !/^user_[0-9A-Z]{26}$/.test(o.merchant))
        throw new Error(`--merchant must be a merchant id (user_…), got ${JSON.stringify(o.merchant)}`);
      const reports = await withDb(config, (db) => verifyChains(db, o.merchant));
      const broken = reports.filter((report) => report.broken !== null);
      const records = reports.reduce((sum, report) => sum + report.records, 0);
      const lines = reports.map((report) =>
        report.broken
          ? `${report.userId}  ${report.records} records  BROKEN: ${report.broken.kind} at record ${report.broken.seq}${report.broken.id ? ` (${report.broken.id})` : ''}: ${report.broken.reason}`
          : `${report.userId}  ${report.records} records  ok`,
      );
      lines.push(
        broken.length === 0
          ? `${reports.length} merchant${reports.length === 1 ? '' : 's'}, ${records} records: every chain verifies`
          : `${broken.length} of ${reports.length} chains broken`,
      );
      print({ merchants: reports.length, records, ok: broken.length === 0, chains: reports }, o.json, lines.join('\n'));
      return broken.length === 0 ? 0 : 1;
    },
  },
};
