import type { ModuleManifest } from '../manifest.ts';
import { countTestReceipts, deleteTestReceipts, holdTestReceipts } from './receipts.repo.ts';
import { registerReceiptRoutes } from './receipts.routes.ts';
import { issueForEvent } from './receipts.service.ts';

/** Receipts: the tax settings, a receipt (or tax invoice) per successful payment, a credit note per successful refund. */
export const receiptsModule: ModuleManifest = {
  name: 'receipts',
  routes: (app, deps) => registerReceiptRoutes(app, deps),
  // Issued in the transaction that makes the payment or refund successful, as its event is written.
  onEvent: (db, event) => issueForEvent(db, event),
  testData: {
    kinds: { receipts: 'Receipts and credit notes' },
    count: async (db, userId) => ({ receipts: await countTestReceipts(db, userId) }),
    hold: holdTestReceipts,
    delete: async (trx, userId) => ({ receipts: await deleteTestReceipts(trx, userId) }),
  },
};
