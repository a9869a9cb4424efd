import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Histogram, Registry, type Metric } from 'prom-client';
import { HTTP_DURATION_BUCKETS as BOUNDS, HttpDurations } from './metrics.ts';
import { buildTestApp } from '../../test/helpers.ts';

test('the duration histogram is written line for line as prom-client writes its own Histogram', async () => {
  const observation = fc.record({
    method: fc.constantFrom('GET', 'POST', 'DELETE'),
    route: fc.constantFrom('/v1/requests/:id', '/v1/requests', '/healthz', 'unmatched'),
    status: fc.constantFrom(200, 201, 400, 404, 500),
    // The bounds themselves (a value on a bound is in its bucket), and anything from none to past the last.
    seconds: fc.oneof(fc.constantFrom(0, ...BOUNDS), fc.double({ min: 0, max: 20, noNaN: true })),
  });
  await fc.assert(
    fc.asyncProperty(fc.array(observation, { maxLength: 60 }), async (observations) => {
      const theirs = new Registry();
      const histogram = new Histogram({
        name: 'tono_http_request_duration_seconds',
        help: 'HTTP request duration by route and status',
        labelNames: ['method', 'route', 'status'] as const,
        buckets: BOUNDS,
        registers: [theirs],
      });
      const ours = new Registry();
      const durations = new HttpDurations(BOUNDS);
      ours.registerMetric(durations as unknown as Metric);
      for (const { method, route, status, seconds } of observations) {
        histogram.observe({ method, route, status: String(status) }, seconds);
        durations.observe(method, route, status, seconds);
      }
      assert.equal(await ours.metrics(), await theirs.metrics());
      // As JSON: prom-client leaves an `exemplar: undefined` on some lines, which no reader sees.
      const asJson = async (registry: Registry) => JSON.parse(JSON.stringify(await registry.getMetricsAsJSON()));
      assert.deepEqual(await asJson(ours), await asJson(theirs));
      ours.resetMetrics();
      assert.doesNotMatch(await ours.metrics(), /_count/);
    }),
    { numRuns: 200 },
  );
});

test('every call is counted under its route, a call no route takes under "unmatched", once each', async (t) => {
  const { app } = await buildTestApp(t);
  for (let i = 0; i < 3; i++) assert.equal((await app.inject({ url: '/healthz' })).statusCode, 200);
  assert.equal((await app.inject({ url: '/no-such-page' })).statusCode, 404);
  assert.equal(
    (await app.inject({ url: '/v1/requests/request_x', headers: { authorization: 'Bearer sk_test_nope' } })).statusCode,
    401,
  );
  const metrics = (await app.inject({ url: '/metrics' })).body;
  assert.match(metrics, /^tono_http_request_duration_seconds_count\{method="GET",route="\/healthz",status="200"\} 3$/m);
  assert.match(metrics, /^tono_http_request_duration_seconds_count\{method="GET",route="unmatched",status="404"\} 1$/m);
  assert.match(
    metrics,
    /^tono_http_request_duration_seconds_count\{method="GET",route="\/v1\/requests\/:id",status="401"\} 1$/m,
  );
  assert.match(
    metrics,
    /^tono_http_request_duration_seconds_bucket\{le="\+Inf",method="GET",route="\/healthz",status="200"\} 3$/m,
  );
});
