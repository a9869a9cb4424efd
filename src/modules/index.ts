import type { App } from '../http/app-type.ts';
import type { SecretBox } from '../shared/secret-box.ts';
import type { Db } from '../store/db.ts';
import { sealStoredSecrets as sealAllStoredSecrets } from '../store/seal-at-rest.ts';
import type { Deps } from './context.ts';
import type { CheckoutStrategy } from './manifest.ts';
import type { RunnableKind } from '../jobs/worker.ts';
import type { Contributions, ModuleManifest, Runner } from './manifest.ts';
import type { PayHelper } from './manifest.ts';
import { auditModule } from './audit/audit.module.ts';
import { authorisationsModule } from './authorisations/authorisations.module.ts';
import { banksModule } from './banks/banks.module.ts';
import { checkoutModule } from './checkout/checkout.module.ts';
import { consentsModule } from './consents/consents.module.ts';
import { customersModule } from './customers/customers.module.ts';
import { dashboardModule } from './dashboard/dashboard.module.ts';
import { eventsModule } from './events/events.module.ts';
import { mailModule } from './mail/mail.module.ts';
import { maintenanceModule } from './maintenance/maintenance.module.ts';
import { merchantsModule } from './merchants/merchants.module.ts';
import { payerModule } from './payer/payer.module.ts';
import { paymentsModule } from './payments/payments.module.ts';
import { reconciliationModule } from './reconciliation/reconciliation.module.ts';
import { receiptsModule } from './receipts/receipts.module.ts';
import { refundsModule } from './refunds/refunds.module.ts';
import { requestsModule } from './requests/requests.module.ts';
import { subscriptionsModule } from './subscriptions/subscriptions.module.ts';
import { teamModule } from './team/team.module.ts';
import { testHelpersModule } from './test-helpers/test-helpers.module.ts';
import { webhooksModule } from './webhooks/webhooks.module.ts';
import { setEventSubscribers } from './events/events.subscribers.ts';
import { setOwnAddressLookup } from './mail/mail.own-addresses.ts';
import { ownAddressesOf } from './merchants/merchants.accounts.ts';

/** Every module of Tono. The app, the runtime, the CLI and the tests are built from this list. */
export const manifests: readonly ModuleManifest[] = [
  merchantsModule,
  auditModule,
  teamModule,
  requestsModule,
  paymentsModule,
  customersModule,
  authorisationsModule,
  consentsModule,
  subscriptionsModule,
  refundsModule,
  reconciliationModule,
  receiptsModule,
  checkoutModule,
  eventsModule,
  webhooksModule,
  mailModule,
  payerModule,
  dashboardModule,
  banksModule,
  testHelpersModule,
  maintenanceModule,
];

// Every event reaches the subscribers the manifests declare; wired once, as the list is.
setEventSubscribers(manifests.flatMap((manifest) => (manifest.onEvent ? [manifest.onEvent] : [])));
// A merchant's test-mode mail goes by SMTP only to its own people, whom the team module knows.
setOwnAddressLookup(ownAddressesOf);

/** Gathers what modules contribute to one another; a kind contributed twice is a wiring mistake. */
export function contributionsOf(deps: Deps, list: readonly ModuleManifest[] = manifests): Contributions {
  const checkout = new Map<string, CheckoutStrategy>();
  const payHelpers = new Map<string, PayHelper>();
  for (const manifest of list) {
    for (const [kind, build] of Object.entries(manifest.checkout ?? {})) {
      if (checkout.has(kind))
        throw new Error(`two modules provide the checkout of ${kind} requests (the second is ${manifest.name})`);
      checkout.set(kind, build(deps));
    }
    for (const [kind, helper] of Object.entries(manifest.payHelpers ?? {})) {
      if (payHelpers.has(kind))
        throw new Error(`two modules provide the pay helper of ${kind} requests (the second is ${manifest.name})`);
      payHelpers.set(kind, helper);
    }
  }
  // Deleted last module first: a module is listed after those whose rows its rows point at.
  const testData = list.flatMap((manifest) =>
    manifest.testData ? [{ ...manifest.testData, module: manifest.name }] : [],
  );
  const bankReturns = list.flatMap((manifest) => manifest.bankReturns ?? []);
  return { checkout, payHelpers, testData: testData.reverse(), bankReturns };
}

/** Every module's routes, on one app. */
export async function registerModuleRoutes(
  app: App,
  deps: Deps,
  list: readonly ModuleManifest[] = manifests,
): Promise<void> {
  const contributions = contributionsOf(deps, list);
  for (const manifest of list) await manifest.routes?.(app, deps, contributions);
}

/** Every job kind the generic worker runs, by name; a name declared twice is a wiring mistake. */
export function jobKindsOf(deps: Deps, list: readonly ModuleManifest[] = manifests): Map<string, RunnableKind> {
  const kinds = new Map<string, RunnableKind>();
  for (const manifest of list) {
    for (const kind of manifest.jobs ?? []) {
      if (kinds.has(kind.name))
        throw new Error(`job kind ${kind.name} is declared twice (the second time by ${manifest.name})`);
      kinds.set(kind.name, { handler: kind.handler(deps), backoff: kind.backoff, maxAttempts: kind.maxAttempts });
    }
  }
  return kinds;
}

export function runnersOf(deps: Deps, list: readonly ModuleManifest[] = manifests): Runner[] {
  return list.flatMap((manifest) => manifest.runners?.(deps) ?? []);
}

/** Seals, once per database, the secrets every module stored in clear before sealing at rest. */
export async function sealStoredSecrets(
  db: Db,
  secrets: SecretBox,
  now: number,
  list: readonly ModuleManifest[] = manifests,
): Promise<boolean> {
  return sealAllStoredSecrets(
    db,
    secrets,
    now,
    list.flatMap((manifest) => (manifest.sealSecrets ? [manifest.sealSecrets] : [])),
  );
}

/** Work each module sets going once in a process that runs workers. */
export async function startModules(deps: Deps, list: readonly ModuleManifest[] = manifests): Promise<void> {
  for (const manifest of list) await manifest.start?.(deps);
}
