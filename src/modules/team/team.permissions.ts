// Who in a merchant's team may do what in the dashboard (docs/team.md). The one table of roles and
// permissions: every dashboard route names one permission (kit.guard), and the route is refused
// with 403 to a role that does not have it. docs/team.md shows this table; a test checks the two agree.

export const ROLES = ['owner', 'admin', 'developer', 'support', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

export const PERMISSIONS = {
  read: 'See every page: requests, payments, refunds, reconciliation, customers, recurring, webhooks, events, keys, bank accounts, the test clock, the team',
  'requests.manage': 'Create and cancel payment requests',
  'recurring.manage': 'Charge recurring consents; revoke consents; cancel, pause and resume subscriptions',
  'refunds.create': 'Refund a payment (support: up to the refund limit the team sets)',
  'refunds.any_amount': 'Refund any amount the payment and the refund authority allow',
  'refunds.manage': 'Mark refunds paid by hand',
  'bank_settings.manage': 'Add bank accounts; set up and revoke the refund authority',
  'reconciliation.manage': 'Import bank statements; match and unmatch their lines by hand',
  'tax_settings.manage': 'Set the legal name, GST number and how receipts and tax invoices are issued',
  'api_keys.manage': 'Create and revoke API keys',
  'webhooks.manage': 'Create, change, disable, recover and delete webhook endpoints',
  'events.resend': 'Resend events to webhook endpoints',
  'emails.resend': 'Send an email to a payer again (a consent, subscription or refund notice, a receipt)',
  'test_clock.manage': 'Move and reset the test clock; delete all test data',
  'team.manage': 'Invite, remove and change the role of members (not owners); set the support refund limit',
  'team.owners': 'Make a member an owner, or an owner something else',
  'team.two_factor': 'Require two-factor sign-in for the whole team',
} as const;
export type Permission = keyof typeof PERMISSIONS;

const ALL = Object.keys(PERMISSIONS) as Permission[];

export const ROLE_PERMISSIONS: { readonly [R in Role]: readonly Permission[] } = {
  owner: ALL,
  admin: ALL.filter((permission) => permission !== 'team.owners' && permission !== 'team.two_factor'),
  developer: ['read', 'api_keys.manage', 'webhooks.manage', 'events.resend', 'test_clock.manage'],
  support: ['read', 'refunds.create', 'events.resend', 'emails.resend'],
  viewer: ['read'],
};

export const ROLE_LABELS: { readonly [R in Role]: string } = {
  owner: 'Owner',
  admin: 'Admin',
  developer: 'Developer',
  support: 'Support',
  viewer: 'Viewer',
};

export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (ROLES as readonly string[]).includes(value);
}

export function can(role: Role, permission: Permission): boolean {
  return ROLE_PERMISSIONS[role].includes(permission);
}

/** The table as docs/team.md shows it: a row per permission, a column per role. */
export function permissionTableMarkdown(): string {
  const header = `| permission | what it allows | ${ROLES.join(' | ')} |`;
  const rule = `|---|---|${ROLES.map(() => '---').join('|')}|`;
  const rows = ALL.map(
    (permission) =>
      `| \`${permission}\` | ${PERMISSIONS[permission]} | ${ROLES.map((role) => (can(role, permission) ? 'yes' : '')).join(' | ')} |`,
  );
  return [header, rule, ...rows].join('\n');
}
