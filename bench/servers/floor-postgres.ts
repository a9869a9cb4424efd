// The floors on PostgreSQL: what a create and an execution cannot do without, written as plainly
// as the `pg` driver allows, on a schema of their own (DATABASE_URL's search_path), measured in the
// same run as the service and divided by the same baselines (bench/servers/bare-postgres.ts).
// Each event is delivered, signed, to a webhook receiver (RECEIVER_URL) as the service's are, so a
// floor does what the service does under the bench, and nothing else (without RECEIVER_URL, as for
// a merchant with no endpoint, events are written and no delivery is made):
// - POST /v1/requests: the API key read by its hash; the QR code drawn (the service's own function);
//   the request, its `request.created` event and the event's delivery in one statement, so one
//   round trip and one commit; the 1.4 kB reply.
// - POST /v1/payments: the API key read; the reservation in one statement and one commit (the consent
//   by its token hash, its total limit checked and its counters moved under the row's lock, the
//   payment, its `payment.created` event and the delivery; a repeated idempotency key fails it);
//   one keep-alive HTTP call to the bank stub (BANK_URL); the outcome in one statement and one
//   commit (the payment's status guarded by the one reserved, its `payment.status_updated` event
//   and the delivery); the reply.
// - Deliveries: each POSTed once its commit returned, signed as the service's X-Service-Signature
//   is (the service also sends the Standard Webhooks headers), and marked delivered by the batch
//   in one update that does not wait for the WAL's flush. A pending delivery stays in a partial
//   index for a restart to find; the floor never restarts, so it has no such sweep.
// What it leaves out is what the service adds to the same work: an audit record, Idempotency-Key
// replies, jobs with leases and retries, per-period limits, tax settings and receipts, a request's
// expiry, the payer account kept for a consent, rate limits, logs and metrics.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import Fastify from 'fastify';
import pg from 'pg';
import { Agent, request as httpRequest } from 'undici';
import { qrDataUri } from '../../src/modules/requests/qr.ts';
import { signWebhookBody } from '../../src/modules/webhooks/verify.js';
import { callBank } from './bank-call.ts';

const CONSENTS = Number(process.env.FLOOR_CONSENTS ?? 20);
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
await pool.query(`
  CREATE TABLE api_keys (key_hash TEXT PRIMARY KEY, user_id TEXT NOT NULL, mode TEXT NOT NULL);
  CREATE TABLE requests (id TEXT PRIMARY KEY, user_id TEXT NOT NULL, amount_cents INTEGER NOT NULL,
    message TEXT NOT NULL, reference TEXT NOT NULL, qr_data TEXT NOT NULL, created_at BIGINT NOT NULL);
  CREATE TABLE consents (id TEXT PRIMARY KEY, user_id TEXT NOT NULL, token_hash TEXT NOT NULL UNIQUE,
    used_count INTEGER NOT NULL, used_cents BIGINT NOT NULL, max_total_cents BIGINT NOT NULL);
  CREATE TABLE payments (id TEXT PRIMARY KEY, user_id TEXT NOT NULL, consent_id TEXT NOT NULL,
    idempotency_key TEXT NOT NULL, amount_cents INTEGER NOT NULL, status TEXT NOT NULL,
    bank_payment_id TEXT, created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL,
    UNIQUE (user_id, idempotency_key));
  CREATE TABLE events (id TEXT PRIMARY KEY, user_id TEXT NOT NULL, type TEXT NOT NULL, body TEXT NOT NULL,
    created_at BIGINT NOT NULL);
  CREATE TABLE deliveries (id TEXT PRIMARY KEY, event_id TEXT NOT NULL, status TEXT NOT NULL,
    created_at BIGINT NOT NULL, delivered_at BIGINT);
  CREATE INDEX deliveries_pending ON deliveries (created_at) WHERE status = 'pending';
`);
const KEY = 'sk_test_floor';
const USER = 'user_floor';
const hashOf = (secret: string) => createHash('sha256').update(secret).digest('hex');
const tokens = Array.from({ length: CONSENTS }, (_, i) => `floor-token-${i}`);
await pool.query('INSERT INTO api_keys VALUES ($1, $2, $3)', [hashOf(KEY), USER, 'test']);
for (const [i, token] of tokens.entries())
  await pool.query('INSERT INTO consents VALUES ($1, $2, $3, 0, 0, $4)', [`consent_${i}`, USER, hashOf(token), 1e15]);
// No ANALYZE: statistics of empty tables would have the prepared statements' kept plans read
// payments and deliveries whole once they grow; without any, the planner takes their keys.

const requestBody = fs.readFileSync(new URL('./request-body.json', import.meta.url), 'utf8');
const bankUrl = process.env.BANK_URL;
const receiverUrl = process.env.RECEIVER_URL;
const webhookSecret = randomBytes(32).toString('base64');
const receiver = new Agent({ keepAliveTimeout: 60_000, connections: 64 });
const id = (prefix: string) => `${prefix}_${randomUUID().replaceAll('-', '')}`;

/** The caller's merchant, from the API key by its hash; null for an unknown key. */
async function merchantOf(authorization: string | undefined): Promise<string | null> {
  const { rows } = await pool.query({
    name: 'key',
    text: 'SELECT user_id, mode FROM api_keys WHERE key_hash = $1',
    values: [hashOf((authorization ?? '').slice('Bearer '.length))],
  });
  return rows[0]?.user_id ?? null;
}

type Delivery = { id: string; eventId: string; body: string };
let delivered: string[] = [];
let recording = false;

/** The end of a statement that wrote event `e`: its delivery, the last parameter, when there is an endpoint. */
function thenDeliver(at: number, parameter: number): string {
  return receiverUrl
    ? `INSERT INTO deliveries (id, event_id, status, created_at) SELECT $${parameter}, e.id, 'pending', $${at} FROM e RETURNING id`
    : 'SELECT id FROM e';
}

/** The statement's values, the delivery's id last when there is an endpoint. */
function withDelivery(values: unknown[], deliveryId: string): unknown[] {
  return receiverUrl ? [...values, deliveryId] : values;
}

let closing = false;

/** Sends a committed delivery, and has it marked delivered with the others answered meanwhile. */
function deliver(delivery: Delivery): void {
  if (!receiverUrl) return;
  httpRequest(receiverUrl, {
    method: 'POST',
    dispatcher: receiver,
    headers: {
      'content-type': 'application/json',
      'x-service-event-id': delivery.eventId,
      'x-service-signature': signWebhookBody(delivery.body, webhookSecret),
    },
    body: delivery.body,
  })
    .then(async (response) => {
      await response.body.dump();
      delivered.push(delivery.id);
      if (!recording) setImmediate(recordDelivered);
      recording = true;
    })
    .catch((error) => process.stderr.write(`delivery failed: ${(error as Error).message}\n`));
}

// A lost mark only sends its delivery again, which receivers must bear anyway (at least once), so
// the marks go on a connection of their own whose commits do not wait for the WAL's flush.
const marks = new pg.Client({ connectionString: process.env.DATABASE_URL });
await marks.connect();
await marks.query('SET synchronous_commit = off');

async function recordDelivered(): Promise<void> {
  const ids = delivered;
  delivered = [];
  try {
    // Unnamed, so planned at each call for the table as it is: a plan kept from when the table was
    // small reads it whole once it has grown.
    await marks.query({
      text: `UPDATE deliveries SET status = 'delivered', delivered_at = $2 WHERE id = ANY($1::text[])`,
      values: [ids, Date.now()],
    });
  } catch (error) {
    if (!closing) process.stderr.write(`recording deliveries failed: ${(error as Error).message}\n`);
  } finally {
    recording = delivered.length > 0;
    if (recording) setImmediate(recordDelivered);
  }
}

function eventBody(eventId: string, type: string, data: Record<string, unknown>, now: number): string {
  return JSON.stringify({ id: eventId, type, created_at: new Date(now).toISOString(), data });
}

const app = Fastify({ logger: false });

app.post<{ Body: { amount: string; message: string; reference: string } }>('/v1/requests', async (request, reply) => {
  const user = await merchantOf(request.headers.authorization);
  if (!user) return reply.code(401).send({ error: 'unauthorised' });
  const now = Date.now();
  const requestId = id('request');
  const qr = await qrDataUri(`http://127.0.0.1:3000/pay/${requestId}`);
  const eventId = id('event');
  const body = eventBody(
    eventId,
    'request.created',
    { id: requestId, merchant_identifier: null, user_id: user, created_at: new Date(now).toISOString() },
    now,
  );
  const deliveryId = id('delivery');
  await pool.query({
    name: 'create',
    text: `WITH r AS (
             INSERT INTO requests (id, user_id, amount_cents, message, reference, qr_data, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id),
           e AS (INSERT INTO events (id, user_id, type, body, created_at)
             SELECT $8, $2, 'request.created', $9, $7 FROM r RETURNING id)
             ${thenDeliver(7, 10)}`,
    values: withDelivery(
      [requestId, user, 1250, request.body.message, request.body.reference, qr, now, eventId, body],
      deliveryId,
    ),
  });
  deliver({ id: deliveryId, eventId, body });
  return reply.code(201).type('application/json').send(requestBody);
});

app.post<{ Body: { token: string; amount: string; idempotency_key: string } }>(
  '/v1/payments',
  async (request, reply) => {
    const user = await merchantOf(request.headers.authorization);
    if (!user) return reply.code(401).send({ error: 'unauthorised' });
    const amountCents = Math.round(Number.parseFloat(request.body.amount) * 100);
    const now = Date.now();
    const paymentId = id('payment');
    const created = { eventId: id('event'), deliveryId: id('delivery') };
    const data = { id: paymentId, request_id: null, user_id: user, merchant_identifier: null };
    const createdBody = eventBody(
      created.eventId,
      'payment.created',
      { ...data, status: 'pending', updated_at: new Date(now).toISOString() },
      now,
    );
    const reserved = await pool.query({
      name: 'reserve',
      text: `WITH c AS (
             UPDATE consents SET used_count = used_count + 1, used_cents = used_cents + $3
             WHERE token_hash = $2 AND user_id = $1 AND used_cents + $3 <= max_total_cents RETURNING id),
           p AS (INSERT INTO payments (id, user_id, consent_id, idempotency_key, amount_cents, status, created_at, updated_at)
             SELECT $4, $1, c.id, $5, $3, 'pending', $6, $6 FROM c RETURNING id),
           e AS (INSERT INTO events (id, user_id, type, body, created_at)
             SELECT $7, $1, 'payment.created', $8, $6 FROM p RETURNING id)
           ${thenDeliver(6, 9)}`,
      values: withDelivery(
        [
          user,
          hashOf(request.body.token),
          amountCents,
          paymentId,
          request.body.idempotency_key,
          now,
          created.eventId,
          createdBody,
        ],
        created.deliveryId,
      ),
    });
    if (reserved.rowCount === 0) return reply.code(422).send({ error: 'over the consent limit or no such consent' });
    deliver({ id: created.deliveryId, eventId: created.eventId, body: createdBody });

    const answer = await callBank(bankUrl, amountCents);
    const status = answer.Status === 'AcceptedSettlementCompleted' ? 'successful' : 'failed';
    const recordedAt = Date.now();
    const updated = { eventId: id('event'), deliveryId: id('delivery') };
    const updatedBody = eventBody(
      updated.eventId,
      'payment.status_updated',
      { ...data, status, updated_at: new Date(recordedAt).toISOString() },
      recordedAt,
    );
    await pool.query({
      name: 'record',
      text: `WITH p AS (
             UPDATE payments SET status = $2, bank_payment_id = $3, updated_at = $4
             WHERE id = $1 AND status = 'pending' RETURNING id),
           e AS (INSERT INTO events (id, user_id, type, body, created_at)
             SELECT $5, $6, 'payment.status_updated', $7, $4 FROM p RETURNING id)
           ${thenDeliver(4, 8)}`,
      values: withDelivery(
        [paymentId, status, answer.DomesticPaymentId, recordedAt, updated.eventId, user, updatedBody],
        updated.deliveryId,
      ),
    });
    deliver({ id: updated.deliveryId, eventId: updated.eventId, body: updatedBody });
    return reply.code(201).send({
      payment: {
        id: paymentId,
        status,
        amount: { value: `${(amountCents / 100).toFixed(2)} NZD`, formatted: `$${(amountCents / 100).toFixed(2)}` },
        user_id: user,
        bank_payment_id: answer.DomesticPaymentId,
        idempotency_key: request.body.idempotency_key,
        created_at: new Date(now).toISOString(),
        updated_at: new Date(recordedAt).toISOString(),
      },
    });
  },
);

/** How many deliveries are still pending (the bench checks that the floor delivered every event). */
app.get('/pending', async () => {
  const { rows } = await pool.query(`SELECT count(*)::int AS pending FROM deliveries WHERE status = 'pending'`);
  return rows[0];
});

const url = await app.listen({ port: 0, host: '127.0.0.1' });
process.stdout.write(`${JSON.stringify({ url, key: KEY, tokens })}\n`);
process.on('SIGTERM', () => {
  closing = true;
  app.close().then(async () => {
    await Promise.all([pool.end(), marks.end()]);
    process.exit(0);
  });
});
