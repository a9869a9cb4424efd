import type { ModuleManifest } from '../manifest.ts';
import { sandboxBankManifest, serviceClient } from '../../sandbox-bank/sandbox-bank.app.ts';

/** Banks: the connectors (deps.banks), and the sandbox bank (src/sandbox-bank) mounted at /sandbox-bank. */
export const banksModule: ModuleManifest = {
  name: 'banks',
  async routes(app, deps) {
    await app.register(sandboxBankManifest.plugin, {
      prefix: '/sandbox-bank',
      db: deps.db,
      clock: deps.clock,
      zone: deps.config.serviceTimeZone,
      clients: serviceClient(() => deps.config.publicBaseUrl, deps.banks.sandboxCredentials.clientSecret),
    });
  },
};
