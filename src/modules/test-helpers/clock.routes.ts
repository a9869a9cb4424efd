import { Type } from 'typebox';
import { apiKeyAuth, keyScope } from '../merchants/merchants.auth.ts';
import { errorResponses, Timestamp } from '../../http/schemas.ts';
import { advanceClock, getClock, resetClock, testKeysOnly } from './clock.service.ts';
import type { Deps } from '../context.ts';
import type { App } from '../../http/app-type.ts';

const ClockEnvelope = Type.Object({
  clock: Type.Object({
    now: Timestamp,
    offset_seconds: Type.Integer({ description: 'How far the test clock is ahead of real time' }),
  }),
});

export async function registerTestClockRoutes(app: App, deps: Deps): Promise<void> {
  const tags = ['Test helpers'];
  app.get(
    '/v1/test-helpers/clock',
    {
      onRequest: [apiKeyAuth(deps), testKeysOnly],
      config: { keyScope: keyScope('all') },
      schema: {
        tags,
        summary: "The merchant's test clock (test keys only)",
        response: { 200: ClockEnvelope, ...errorResponses },
      },
    },
    async (request) => getClock(request.ctx),
  );

  app.post(
    '/v1/test-helpers/clock/advance',
    {
      onRequest: [apiKeyAuth(deps), testKeysOnly],
      config: { keyScope: keyScope('all') },
      schema: {
        tags,
        summary: 'Move the test clock forward; returns once all work due up to then has run',
        description:
          'The test clock may be at most 20 years ahead of real time: an advance past that is refused (400, with the latest time allowed in ' +
          'params.maximum) and moves nothing. At most TEST_CLOCK_MAX_JOBS jobs (100,000 by default) run per call, ' +
          'for at most TEST_CLOCK_MAX_SECONDS (20 s by default): when either is reached first, ' +
          'the clock stops where the work stopped and work_remaining is true; advance again to go on.',
        body: Type.Object(
          {
            to: Type.Optional(
              Type.String({
                format: 'date-time',
                description: 'New clock time',
                'x-expected': 'an ISO 8601 date-time',
              }),
            ),
            // No schema maximum: how many seconds are allowed depends on how far ahead the clock is
            // already, and one refusal (with the most allowed now) serves every value past it.
            seconds: Type.Optional(Type.Integer({ minimum: 1, description: 'Seconds to move forward' })),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({
            ...ClockEnvelope.properties,
            work_remaining: Type.Boolean({
              description: 'True when the job cap stopped this advance before the target: advance again to go on',
            }),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => advanceClock(request.ctx, request.body),
  );

  app.post(
    '/v1/test-helpers/clock/reset',
    {
      onRequest: [apiKeyAuth(deps), testKeysOnly],
      config: { keyScope: keyScope('all') },
      schema: {
        tags,
        summary: 'Set the test clock back to real time (offset 0)',
        description:
          'Work scheduled on the test clock (subscription charges and their retries, expiries, sweeps) keeps its time on the clock: ' +
          'it runs when the clock reaches that time again, as real time passes or by an advance, never twice and never early. ' +
          'Objects made while the clock was ahead keep their times. Webhook deliveries and their retries run on real time and do not move. ' +
          'DELETE /v1/test-helpers/data deletes the test data, for a fresh start.',
        response: { 200: ClockEnvelope, ...errorResponses },
      },
    },
    async (request) => resetClock(request.ctx),
  );
}
