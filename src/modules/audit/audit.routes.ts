import { apiKeyAuth, keyScope } from '../merchants/merchants.auth.ts';
import { errorResponses } from '../../http/schemas.ts';
import { parseDateTime } from '../../shared/date-time.ts';
import { AuditEventList, ListAuditEventsQuery } from './audit.schemas.ts';
import { listAuditEvents } from './audit.service.ts';
import { presentAuditEvent } from './audit.present.ts';
import type { Deps } from '../context.ts';
import type { App } from '../../http/app-type.ts';

export async function registerAuditRoutes(app: App, deps: Deps): Promise<void> {
  app.get(
    '/v1/audit-events',
    {
      onRequest: apiKeyAuth(deps),
      config: { keyScope: keyScope('audit') },
      schema: {
        tags: ['Audit'],
        summary: 'List the audit trail, newest first',
        description:
          "Every change to the merchant's data of the key's mode; a live key also gets those without a mode (settings, team members, sign-ins). Each record is hash-chained to the one before it (docs/audit.md).",
        querystring: ListAuditEventsQuery,
        response: { 200: AuditEventList, ...errorResponses },
      },
    },
    async (request) => {
      const { ctx, query } = request;
      const gte = query['created[gte]'];
      const lt = query['created[lt]'];
      const { items, hasMore } = await listAuditEvents(ctx.db, ctx.merchant.id, ctx.mode, {
        ...query,
        // Settings, team members and their sign-ins (addresses, browsers, emails) are live business:
        // a test key, often held by CI and contractors, never reads them.
        modeless: ctx.mode === 'live',
        // The schema let only date-times in the API's form through (shared/date-time.ts).
        created_gte: gte === undefined ? undefined : parseDateTime(gte)!,
        created_lt: lt === undefined ? undefined : parseDateTime(lt)!,
      });
      return { audit_events: items.map(presentAuditEvent), has_more: hasMore };
    },
  );
}
