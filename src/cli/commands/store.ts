import fs from 'node:fs';
import path from 'node:path';
import { storeOf } from '../../store/store.ts';
import { KEY_FILE_NAME } from '../../store/secret-key.ts';
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
    usage: '--to FILE   consistent copy of the SQLite database, and its key file to FILE.key (PostgreSQL: use pg_dump)',
    options: { to: { type: 'string' }, json: { type: 'boolean' } },
    async run(config, o) {
      if (!o.to) throw new Error('backup needs --to FILE');
      const target = path.resolve(o.to);
      const folder = path.dirname(target);
      if (!fs.existsSync(folder) || !fs.statSync(folder).isDirectory())
        throw new Error(`the folder ${folder} does not exist; create it first`);
      // The database's secrets open only with its key: the key file is copied beside the backup
      // (owner-only, as the backup); a key from SECRET_KEY is the operator's to keep with it.
      const keyFile = config.secretKey ? null : path.join(config.dataDir, KEY_FILE_NAME);
      const keyTarget = `${target}.key`;
      for (const file of keyFile ? [target, keyTarget] : [target])
        if (fs.existsSync(file)) throw new Error(`${file} already exists`);
      await withDb(config, (db) => storeOf(db).backupTo(target));
      if (keyFile) fs.writeFileSync(keyTarget, fs.readFileSync(keyFile), { flag: 'wx', mode: 0o600 });
      else process.stderr.write('the backup is sealed with SECRET_KEY, which it does not hold: keep the key with it\n');
      print(
        { backup: target, key: keyFile ? keyTarget : null },
        o.json,
        keyFile ? `backup written to ${target}, its key to ${keyTarget}` : `backup written to ${target}`,
      );
      return 0;
    },
  },
};
