import type { ModuleManifest } from '../manifest.ts';
import { registerCheckoutRoutes } from './checkout.routes.ts';
import { oneOffCheckout } from './checkout.strategies.ts';

/** The hosted page at /pay/{id}: the payer picks a bank and approves there. */
export const checkoutModule: ModuleManifest = {
  name: 'checkout',
  routes: (app, deps, contributions) =>
    registerCheckoutRoutes(app, deps, contributions.checkout, contributions.bankReturns),
  checkout: { payment: () => oneOffCheckout },
};
