import { PaymentStatus } from '../../payments/payments.rules.ts';
import { paymentActivityFor } from '../../payments/payments.service.ts';
import { subscriptionCountsFor } from '../../subscriptions/subscriptions.service.ts';
import { consentCountsFor } from '../../consents/consents.service.ts';
import { failuresNeedingAttention } from '../../webhooks/webhooks.service.ts';
import { DAY_MS } from '../../../shared/time.ts';
import { columnBars, receivedPerDay, rowBars, statusBreakdown } from '../dashboard.charts.ts';
import type { Kit, Scope } from '../dashboard.kit.ts';

// Home: the last 30 days at a glance, charts drawn on the server with the numbers in tables too.

export const HOME_DAYS = 30;
export const CHART = { width: 360, height: 120, rowHeight: 28, rowWidth: 190 };

export function registerHome(scope: Scope, kit: Kit): void {
  scope.get(
    '/dashboard/:mode',
    { schema: { hide: true } },
    kit.guard(async (_request, reply, signed) => {
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
        dayBars: columnBars(
          days.map((d) => d.cents),
          CHART.width,
          CHART.height,
        ),
        chart: CHART,
        totalCents: days.reduce((sum, d) => sum + d.cents, 0),
        breakdown,
        statusBars: rowBars(
          breakdown.counts.map((c) => c.count),
          CHART.rowWidth,
          CHART.rowHeight,
        ),
        activeSubscriptions: subscriptions.active ?? 0,
        pausedSubscriptions: subscriptions.paused ?? 0,
        activeConsents: consents.active ?? 0,
        failures: failures.slice(0, 20),
        failureCount: failures.length,
      });
    }),
  );
}
