import fs from 'node:fs';
import path from 'node:path';
import { storeOf } from '../../store/store.ts';
import type { CliCommand } from '../command.ts';
import { print, withDb } from './open.ts';

export const storeCommands: Record<string, CliCommand> = {
  migrate: {
    usage: '  apply pending migrations',
    options: { json: { type: 'boolean' } },
    async run(config, o) {
      await withDb(config, async () => {}, { migrate: true });
      print({ migrated: true }, o.json, 'database is up to date');
      return 0;
    },
  },
  backup: {
    usage: '--to FILE   consistent copy of the SQLite database (PostgreSQL: use pg_dump)',
    options: { to: { type: 'string' }, json: { type: 'boolean' } },
    async run(config, o) {
      if (!o.to) throw new Error('backup needs --to FILE');
      const target = path.resolve(o.to);
      const folder = path.dirname(target);
      if (!fs.existsSync(folder) || !fs.statSync(folder).isDirectory())
        throw new Error(`the folder ${folder} does not exist; create it first`);
      await withDb(config, (db) => storeOf(db).backupTo(target));
      print({ backup: target }, o.json, `backup written to ${target}`);
      return 0;
    },
  },
};
