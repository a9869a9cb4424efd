import { Type } from 'typebox';
import type { App } from '../../app.ts';
import { apiKeyAuth } from '../../http/auth.ts';
import type { Deps } from '../../http/context.ts';
import { errorResponses, Timestamp } from '../../http/schemas.ts';
import { advanceClock, getClock, testKeysOnly } from './clock.service.ts';

const ClockEnvelope = Type.Object({
  clock: Type.Object({ now: Timestamp, offset_seconds: Type.Integer({ description: 'How far the test clock is ahead of real time' }) }),
});

export async function registerTestClockRoutes(app: App, deps: Deps): Promise<void> {
  const tags = ['Test helpers'];
  app.get('/v1/test-helpers/clock', {
    onRequest: [apiKeyAuth(deps), testKeysOnly],
    schema: { tags, summary: "The merchant's test clock (test keys only)", response: { 200: ClockEnvelope, ...errorResponses } },
  }, async (request) => getClock(request.ctx));

  app.post('/v1/test-helpers/clock/advance', {
    onRequest: [apiKeyAuth(deps), testKeysOnly],
    schema: {
      tags,
      summary: 'Move the test clock forward; returns once all work due up to then has run',
      body: Type.Object({
        to: Type.Optional(Type.String({ format: 'date-time', description: 'New clock time', 'x-expected': 'an ISO 8601 date-time' })),
        seconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 20 * 366 * 86400, description: 'Seconds to move forward' })),
      }, { additionalProperties: false }),
      response: { 200: ClockEnvelope, ...errorResponses },
    },
  }, async (request) => advanceClock(request.ctx, request.body));
}
