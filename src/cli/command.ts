import type { ParseArgsConfig } from 'node:util';
import type { Config } from '../config.ts';

export type CliCommand = {
  usage: string;
  options: NonNullable<ParseArgsConfig['options']>;
  run(config: Config, options: Record<string, any>, positionals: string[]): Promise<number>;
};
