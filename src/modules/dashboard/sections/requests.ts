import type { Kit, Scope } from '../dashboard.kit.ts';

export function registerRequestPages(scope: Scope, kit: Kit): void {
  void scope;
  void kit;
}
