import type { ParseArgsConfig } from 'node:util';
import type { Config } from '../../config.ts';
import { merchantCommands } from './merchants.ts';
import { storeCommands } from './store.ts';
import { eventCommands } from './events.ts';
import { devCommands } from './listen.ts';

export type CliCommand = {
  usage: string;
  options: NonNullable<ParseArgsConfig['options']>;
  run(config: Config, options: Record<string, any>, positionals: string[]): Promise<number>;
};

export const commands: Record<string, CliCommand> = {
  ...merchantCommands,
  ...storeCommands,
  ...eventCommands,
  ...devCommands,
};
