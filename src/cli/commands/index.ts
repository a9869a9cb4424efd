import type { CliCommand } from '../command.ts';
import { merchantCommands } from './merchants.ts';
import { memberCommands } from './members.ts';
import { storeCommands } from './store.ts';
import { eventCommands } from './events.ts';
import { devCommands } from './listen.ts';
import { auditCommands } from './audit.ts';
import { paymentCommands } from './payments.ts';

export const commands: Record<string, CliCommand> = {
  ...merchantCommands,
  ...memberCommands,
  ...storeCommands,
  ...eventCommands,
  ...paymentCommands,
  ...auditCommands,
  ...devCommands,
};
