// Admin CLI: npm run --silent cli -- <command> [options]. Runs against the same database as the
// service (DATA_DIR or DATABASE_URL), so it works while the service is running.
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../config.ts';
import { AppError } from '../shared/errors.ts';
import { commands } from './commands/index.ts';
import type { CliCommand } from './command.ts';

function usage(): string {
  const lines = Object.entries(commands).map(([name, command]) => `  ${name.padEnd(18)} ${command.usage}`);
  return `usage: npm run --silent cli -- <command> [options]\n\ncommands:\n${lines.join('\n')}\n`;
}

async function main(argv: string[]): Promise<number> {
  const [first, second, ...rest] = argv;
  let name = first;
  let args = [second, ...rest].filter((a) => a !== undefined);
  if (first && second && commands[`${first} ${second}`]) {
    name = `${first} ${second}`;
    args = rest;
  }
  const command: CliCommand | undefined = name ? commands[name] : undefined;
  if (!command) {
    process.stderr.write(
      name && name !== 'help' && name !== '--help' ? `unknown command: ${name}\n\n${usage()}` : usage(),
    );
    return name && name !== 'help' && name !== '--help' ? 2 : 0;
  }
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args, options: command.options, allowPositionals: true, strict: true });
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\nusage: ${name} ${command.usage}\n`);
    return 2;
  }
  const config = loadConfig({ ...process.env, LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn', WORKERS: 'false' });
  return command.run(config, parsed.values as Record<string, any>, parsed.positionals);
}

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (error) {
  if (error instanceof ConfigError || error instanceof AppError) {
    process.stderr.write(`error: ${error.message}\n`);
  } else {
    process.stderr.write(`error: ${(error as Error).message}\n`);
  }
  process.exitCode = 1;
}
