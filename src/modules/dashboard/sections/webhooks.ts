import type { Kit, Scope } from '../dashboard.kit.ts';

export function registerWebhookPages(scope: Scope, kit: Kit): void {
  void scope;
  void kit;
}
