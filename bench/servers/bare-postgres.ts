// The PostgreSQL baselines: bare Fastify routes on the same `pg` driver, a pool of 10, on a schema
// of their own (DATABASE_URL's search_path), measured in the same run as the service on PostgreSQL.
// - GET /stack-limit/:id: two primary-key reads (the API key by its hash, then the row) and the
//   ~1.4 kB JSON the service returns for a request.
// - POST /create: one committed insert of a request and the same reply (no QR code).
// - POST /bank-call: one keep-alive HTTP call to a bare server (BANK_URL, its own process), then
//   one committed insert.
import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import Fastify from 'fastify';
import pg from 'pg';
import { callBank } from './bank-call.ts';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
await pool.query(`
  CREATE TABLE api_keys (key_hash TEXT PRIMARY KEY, user_id TEXT NOT NULL, mode TEXT NOT NULL);
  CREATE TABLE requests (id TEXT PRIMARY KEY, user_id TEXT NOT NULL, body TEXT NOT NULL);
  CREATE TABLE payments (id BIGSERIAL PRIMARY KEY, idempotency_key TEXT NOT NULL UNIQUE, amount_cents INTEGER NOT NULL, bank_payment_id TEXT NOT NULL, created_at BIGINT NOT NULL);
`);
const KEY = 'sk_test_stacklimit';
const hashOf = (key: string) => createHash('sha256').update(key).digest('hex');
const requestBody = fs.readFileSync(new URL('./request-body.json', import.meta.url), 'utf8');
const requestId = (JSON.parse(requestBody) as { request: { id: string } }).request.id;
await pool.query('INSERT INTO api_keys VALUES ($1, $2, $3)', [hashOf(KEY), 'user_1', 'test']);
await pool.query('INSERT INTO requests VALUES ($1, $2, $3)', [requestId, 'user_1', requestBody]);
await pool.query('ANALYZE');

const bankUrl = process.env.BANK_URL;

const app = Fastify({ logger: false });
app.get<{ Params: { id: string } }>('/stack-limit/:id', async (request, reply) => {
  const key = await pool.query({
    name: 'key',
    text: 'SELECT user_id, mode FROM api_keys WHERE key_hash = $1',
    values: [hashOf((request.headers.authorization ?? '').slice('Bearer '.length))],
  });
  if (key.rows.length === 0) return reply.code(401).send({ error: 'unauthorised' });
  const row = await pool.query({
    name: 'request',
    text: 'SELECT user_id, body FROM requests WHERE id = $1',
    values: [request.params.id],
  });
  if (row.rows.length === 0 || row.rows[0].user_id !== key.rows[0].user_id)
    return reply.code(404).send({ error: 'not_found' });
  return JSON.parse(row.rows[0].body);
});
app.post('/create', async (_request, reply) => {
  await pool.query({
    name: 'create',
    text: 'INSERT INTO requests (id, user_id, body) VALUES ($1, $2, $3)',
    values: [`request_${randomUUID()}`, 'user_1', requestBody],
  });
  return reply.code(201).type('application/json').send(requestBody);
});
app.post<{ Body: { idempotency_key: string; amount_cents: number } }>('/bank-call', async (request, reply) => {
  const answer = await callBank(bankUrl, request.body.amount_cents);
  await pool.query({
    name: 'payment',
    text: 'INSERT INTO payments (idempotency_key, amount_cents, bank_payment_id, created_at) VALUES ($1, $2, $3, $4)',
    values: [request.body.idempotency_key, request.body.amount_cents, answer.DomesticPaymentId, Date.now()],
  });
  return reply.code(201).send({ id: answer.DomesticPaymentId, status: answer.Status });
});
const url = await app.listen({ port: 0, host: '127.0.0.1' });
process.stdout.write(`${JSON.stringify({ url, stackLimitPath: `/stack-limit/${requestId}`, stackLimitKey: KEY })}\n`);
process.on('SIGTERM', () => {
  app.close().then(async () => {
    await pool.end();
    process.exit(0);
  });
});
