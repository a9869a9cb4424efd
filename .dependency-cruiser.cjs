// The module walls of docs/architecture.md, checked by test/architecture.test.ts (part of npm test).
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment:
        'No import circle, type-only imports included: a circle means two files are one module or a type is in the wrong place.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'no-foreign-repo',
      comment:
        "A module reaches another module through its service, never its repo (the tables behind a repo are its module's own).",
      severity: 'error',
      from: { path: '^src/modules/([^/]+)/' },
      to: { path: '^src/modules/([^/]+)/.+[.]repo[.]ts$', pathNot: '^src/modules/$1/' },
    },
    {
      name: 'events-know-no-subscriber',
      comment:
        'The outbox knows nobody who listens to it: subscribers (webhooks) declare onEvent in their manifests. It uses only the key check every route uses and the address shape of customer events.',
      severity: 'error',
      from: { path: '^src/modules/events/' },
      to: {
        path: '^src/modules/[^/]+/',
        pathNot: [
          '^src/modules/events/',
          '^src/modules/merchants/merchants[.]auth[.]ts$',
          '^src/modules/customers/customers[.](rules|schemas)[.]ts$',
        ],
      },
    },
    {
      name: 'no-repo-reexport',
      comment:
        "A repo's functions are its module's own: a service offers named operations instead of re-exporting them, so no other module can lock or write the rows behind them.",
      severity: 'error',
      from: {},
      to: { path: '[.]repo[.]ts$', dependencyTypes: ['export'] },
    },
    {
      name: 'lower-layers-stay-low',
      comment:
        'src/shared, src/store, src/jobs and src/http never import a module; modules plug into them through their manifests (src/modules/index.ts).',
      severity: 'error',
      from: { path: '^src/(shared|store|jobs|http)/' },
      to: { path: '^src/modules/' },
    },
    {
      name: 'sandbox-bank-stands-alone',
      comment:
        'The sandbox bank is an application of its own (it also runs alone): it uses the shared layers, never a module of the service.',
      severity: 'error',
      from: { path: '^src/sandbox-bank/' },
      to: { path: '^src/modules/' },
    },
    {
      name: 'sandbox-bank-through-its-manifest',
      comment:
        'The service reaches the sandbox bank only through its manifest (sandbox-bank.app.ts) and its migrations, as a host would.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/sandbox-bank/' },
      to: {
        path: '^src/sandbox-bank/',
        pathNot: ['^src/sandbox-bank/sandbox-bank[.]app[.]ts$', '^src/sandbox-bank/migrations/index[.]ts$'],
      },
    },
    {
      name: 'luxon-behind-zone',
      comment: 'Local time is read through src/shared/zone.ts, the one file that imports luxon.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/shared/zone[.]ts$' },
      to: { path: 'node_modules/luxon/' },
    },
  ],
  options: {
    parser: 'swc',
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '[.]test[.]ts$' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
};
