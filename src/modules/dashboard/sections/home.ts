import type { Kit, Scope } from '../dashboard.kit.ts';

export function registerHome(scope: Scope, kit: Kit): void {
  scope.get('/dashboard/:mode', { schema: { hide: true } }, kit.guard(async (_request, reply, signed) =>
    kit.render(reply, 200, 'home', { title: 'Home', ...kit.layoutOf(signed, '') })));
}
