import { parseDateTime } from '../../shared/date-time.ts';
import { systemClock } from '../../shared/time.ts';
import type { CliCommand } from '../command.ts';
import { operator, print, withDb } from './open.ts';

// Operator commands for webhook delivery; a running service picks the queued deliveries up.

/** Loaded by the commands that need it: the other commands of the CLI start without it. */
const webhooks = () => import('../../modules/webhooks/webhooks.service.ts');

export const eventCommands: Record<string, CliCommand> = {
  'events resend': {
    usage:
      'EVENT_ID [--webhook webhook_…] [--json]   send an event again (to one endpoint, or every endpoint that takes it)',
    options: { webhook: { type: 'string' }, json: { type: 'boolean' } },
    async run(config, o, positionals) {
      if (!positionals[0]) throw new Error('events resend needs an event id (event_…)');
      const { resendEvent } = await webhooks();
      const result = await withDb(config, (db) =>
        resendEvent(db, null, positionals[0], o.webhook, systemClock.now(), operator()),
      );
      const lines = result.deliveries.map((d) => `queued ${d.id} to ${d.webhook_id}`);
      print(result, o.json, lines.length > 0 ? lines.join('\n') : 'no endpoint takes this event; nothing queued');
      return 0;
    },
  },
  'webhooks recover': {
    usage:
      'WEBHOOK_ID --since 2026-11-21T10:00:00Z [--json]   re-send every delivery to the endpoint that failed since then',
    options: { since: { type: 'string' }, json: { type: 'boolean' } },
    async run(config, o, positionals) {
      if (!positionals[0] || !o.since)
        throw new Error('webhooks recover needs a webhook id (webhook_…) and --since TIME');
      // The API's one date-time rule: with an offset or Z, so the machine's time zone never moves it.
      const since = parseDateTime(o.since);
      if (since === null)
        throw new Error(
          `--since must be an ISO 8601 date-time with Z or an offset (2026-11-21T10:00:00Z), got ${JSON.stringify(o.since)}`,
        );
      const { recoverDeliveries } = await webhooks();
      const result = await withDb(config, (db) =>
        recoverDeliveries(db, null, positionals[0], since, systemClock.now(), operator()),
      );
      print(
        result,
        o.json,
        `re-queued ${result.deliveries.length} failed deliver${result.deliveries.length === 1 ? 'y' : 'ies'}`,
      );
      return 0;
    },
  },
};
