import { PaymentStatus } from '../../payments/payments.rules.ts';
import { paymentActivityFor } from '../../payments/payments.service.ts';
import { subscriptionCountsFor } from '../../subscriptions/subscriptions.service.ts';
import { consentCountsFor } from '../../consents/consents.service.ts';
import { failuresNeedingAttention } from '../../webhooks/webhooks.service.ts';
import { DAY_MS } from '../../../shared/time.ts';
import { receivedChart, receivedPerDay, rowBars, statusBreakdown } from '../dashboard.charts.ts';
import type { Kit, Scope } from '../dashboard.kit.ts';

// Home: the last 30 days at a glance, charts drawn on the server. The days' numbers are in a table
// behind "Show as a table"; payments by status is one table whose rows carry their bars.

export const HOME_DAYS = 30;
/** The column chart's box, with room for the money ticks on the left and the dates underneath. */
export const CHART = { width: 600, height: 240, left: 72, right: 36, top: 10, bottom: 34 };
/** The length of the longest status bar. */
export const STATUS_BAR = { width: 200, height: 16 };

export function registerHome(scope: Scope, kit: Kit): void {
  scope.get(
    '/dashboard/:mode',
    { schema: { hide: true } },
    kit.guard(
      async (_request, reply, signed) => {
        const now = signed.ctx.clock.now();
        const since = now - HOME_DAYS * DAY_MS;
        const [activity, subscriptions, consents, failures] = await Promise.all([
          paymentActivityFor(signed.ctx, since - DAY_MS),
          subscriptionCountsFor(signed.ctx),
          consentCountsFor(signed.ctx),
          failuresNeedingAttention(signed.ctx, since),
        ]);
        const days = receivedPerDay(activity, now, kit.zone(), HOME_DAYS);
        const recent = activity.filter((p) => p.createdAt >= since);
        const breakdown = statusBreakdown(recent, PaymentStatus);
        return kit.render(reply, 200, 'home', {
          title: 'Home',
          ...kit.layoutOf(signed, ''),
          days,
          received: receivedChart(days, CHART),
          chart: CHART,
          totalCents: days.reduce((sum, d) => sum + d.cents, 0),
          breakdown,
          statusBars: rowBars(
            breakdown.counts.map((c) => c.count),
            STATUS_BAR.width,
            STATUS_BAR.height,
          ),
          statusBar: STATUS_BAR,
          activeSubscriptions: subscriptions.active ?? 0,
          pausedSubscriptions: subscriptions.paused ?? 0,
          activeConsents: consents.active ?? 0,
          failures: failures.slice(0, 20),
          failureCount: failures.length,
        });
      },
      { permission: 'read' },
    ),
  );
}
