import { Type } from 'typebox';
import { apiKeyAuth, keyScope } from './merchants.auth.ts';
import { listBankAccounts } from './merchants.service.ts';
import { errorResponses, Nullable, Timestamp } from '../../http/schemas.ts';
import { iso } from '../../shared/time.ts';
import { ListQuery } from '../../shared/pagination.ts';
import type { Deps } from '../context.ts';
import type { App } from '../../http/app-type.ts';

const BankAccountObject = Type.Object({
  id: Type.String(),
  account_number: Type.String({ examples: ['12-3456-7890138-00'] }),
  name: Nullable(Type.String()),
  created_at: Timestamp,
});

export async function registerMerchantRoutes(app: App, deps: Deps): Promise<void> {
  app.get(
    '/v1/bank-accounts',
    {
      onRequest: apiKeyAuth(deps),
      // Bank accounts are where requests are paid into: reading them is part of making requests.
      config: { keyScope: keyScope('requests') },
      schema: {
        tags: ['Bank accounts'],
        summary: 'List your bank accounts (payments are made into one of them)',
        querystring: ListQuery('bankaccount'),
        response: {
          200: Type.Object({ bank_accounts: Type.Array(BankAccountObject), has_more: Type.Boolean() }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const limit = request.query.limit ?? 100;
      const rows = await listBankAccounts(deps.db, request.ctx.merchant.id, {
        limit,
        startingAfter: request.query.starting_after,
      });
      return {
        bank_accounts: rows.slice(0, limit).map((row) => ({
          id: row.id,
          account_number: row.account_number,
          name: row.name,
          created_at: iso(row.created_at),
        })),
        has_more: rows.length > limit,
      };
    },
  );
}
