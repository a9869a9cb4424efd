import type { Kit, Scope } from '../dashboard.kit.ts';

export function registerPaymentPages(scope: Scope, kit: Kit): void {
  void scope;
  void kit;
}
