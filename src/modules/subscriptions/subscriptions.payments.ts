import { pageOf } from '../../shared/pagination.ts';
import { custInfosOfCustomerPayments } from '../customers/customers.service.ts';
import { presentPayment } from '../payments/payments.service.ts';
import { getSubscription } from './subscriptions.repo.ts';
import { listPaymentsOfSubscription } from '../payments/payments.service.ts';
import type { Ctx } from '../context.ts';

/**
 * GET /subscriptions/{id}/payments: every charge's payment with its cust_info, completed from the
 * customer record; all of them unless `limit` is given.
 */
export async function listSubscriptionPayments(
  ctx: Ctx,
  id: string,
  query: { limit?: number; starting_after?: string },
) {
  const owner = { userId: ctx.merchant.id, mode: ctx.mode };
  const subscription = await getSubscription(ctx.db, owner, id);
  const rows = await listPaymentsOfSubscription(ctx.db, owner, id, query);
  const { items, hasMore } = query.limit === undefined ? { items: rows, hasMore: false } : pageOf(rows, query.limit);
  const infos = await custInfosOfCustomerPayments(
    ctx.db,
    owner,
    subscription.customer_id,
    items.map((row) => row.id),
  );
  return { payments: items.map((row) => presentPayment(row, infos.get(row.id))), has_more: hasMore };
}
