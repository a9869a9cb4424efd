import { test } from 'node:test';
import assert from 'node:assert/strict';
import { addMember, dashWorld, logInAs } from '../../../test/dashboard.ts';
import { Browser } from '../../../test/payer.ts';
import { can, ROLES, type Role } from '../team/team.permissions.ts';
import { ROUTE_PERMISSIONS } from './dashboard.kit.ts';

// Every dashboard route Fastify has, for every role: allowed or refused with 403 exactly as the
// permission table says (docs/team.md). The routes come from the app itself (printRoutes), so a
// route added without a permission fails here, as does a guard that lets the wrong role through.

/** `METHOD /path` of every route in the app, read from printRoutes' tree. */
function registeredRoutes(tree: string): string[] {
  const stack: string[] = [];
  const routes: string[] = [];
  for (const line of tree.split('\n')) {
    const match = /^((?:[│ ] {3})*)[├└]── (\S+)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!match) continue;
    const depth = [...match[1]].length / 4;
    stack.length = depth;
    stack.push(match[2]);
    const path = stack.join('');
    for (const method of match[3]?.split(', ') ?? []) routes.push(`${method} ${path}`);
  }
  return routes;
}

const guarded = (route: string) => /^(GET|POST) \/dashboard\/(:mode|team|account)(\/|$)/.test(route);

test('every dashboard route × every role: allowed or 403 as the permission table says', async (t) => {
  const world = await dashWorld(t, { workers: false });
  const [merchant] = world.merchants;
  const routes = registeredRoutes(world.app.app.printRoutes({ commonPrefix: false })).filter(guarded);
  assert.ok(routes.length >= 60, `the dashboard's routes are found (${routes.length})`);
  const missing = routes.filter((route) => !ROUTE_PERMISSIONS.has(route));
  assert.deepEqual(
    missing,
    [],
    'every dashboard route under a mode, and the team and account pages, names its permission',
  );

  const sessions = new Map<Role, { browser: Browser; csrf: string }>();
  for (const role of ROLES) {
    const email = role === 'owner' ? merchant.email : (await addMember(world, merchant, role)).email;
    const browser = await logInAs(world, email);
    const page = await browser.request('/dashboard/team');
    assert.equal(page.status, 200);
    sessions.set(role, { browser, csrf: Browser.csrfOf(page.text) });
  }

  const wrong: string[] = [];
  // The roles that may do least first, so what an allowed post changes comes after every refusal.
  for (const role of [...ROLES].reverse()) {
    const { browser, csrf } = sessions.get(role)!;
    for (const route of routes) {
      const [method, pattern] = route.split(' ');
      const path = pattern
        .replace(':mode', 'test')
        .replace(':id', 'payment_01JD2Q8Z7M3V4K5N6P7R8S9T0V')
        .replace(':ref', '0000000000000000');
      const response = await browser.request(path, method === 'POST' ? { form: { csrf } } : {});
      const allowed = can(role, ROUTE_PERMISSIONS.get(route)!);
      const refused = response.status === 403 && response.text.includes('Your role does not allow this');
      if (allowed ? response.status === 403 : !refused)
        wrong.push(`${role} ${route}: ${response.status}, expected ${allowed ? 'allowed' : '403'}`);
    }
  }
  assert.deepEqual(wrong, []);
});
