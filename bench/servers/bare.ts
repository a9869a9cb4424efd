// The baselines: bare Fastify routes in their own process, measured in the same run as the service.
// - GET /get and POST /echo: Fastify alone, no database.
// - GET /stack-limit/:id: what a read can cost at least on this stack: two primary-key reads in
//   node:sqlite (the API key by its hash, then the row) and the ~1.4 kB JSON the service returns.
// - POST /bank-call: what an execution can cost at least: one keep-alive HTTP call to a bare server
//   (BANK_URL, its own process) and one durable insert (WAL, synchronous=FULL, a commit per request).
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import Fastify from 'fastify';
import { callBank } from './bank-call.ts';

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tono-bench-bare-'));
const sqlite = new DatabaseSync(path.join(dataDir, 'bare.db'));
sqlite.exec(`
  PRAGMA journal_mode = WAL;
  PRAGMA synchronous = FULL;
  CREATE TABLE api_keys (key_hash TEXT PRIMARY KEY, user_id TEXT NOT NULL, mode TEXT NOT NULL);
  CREATE TABLE requests (id TEXT PRIMARY KEY, user_id TEXT NOT NULL, body TEXT NOT NULL);
  CREATE TABLE payments (id INTEGER PRIMARY KEY, idempotency_key TEXT NOT NULL UNIQUE, amount_cents INTEGER NOT NULL, bank_payment_id TEXT NOT NULL, created_at INTEGER NOT NULL);
`);
const KEY = 'sk_test_stacklimit';
const hashOf = (key: string) => createHash('sha256').update(key).digest('hex');
const requestBody = fs.readFileSync(new URL('./request-body.json', import.meta.url), 'utf8');
const requestId = (JSON.parse(requestBody) as { request: { id: string } }).request.id;
sqlite.prepare('INSERT INTO api_keys VALUES (?, ?, ?)').run(hashOf(KEY), 'user_1', 'test');
sqlite.prepare('INSERT INTO requests VALUES (?, ?, ?)').run(requestId, 'user_1', requestBody);
const keyByHash = sqlite.prepare('SELECT user_id, mode FROM api_keys WHERE key_hash = ?');
const requestById = sqlite.prepare('SELECT user_id, body FROM requests WHERE id = ?');
const insertPayment = sqlite.prepare(
  'INSERT INTO payments (idempotency_key, amount_cents, bank_payment_id, created_at) VALUES (?, ?, ?, ?)',
);

const bankUrl = process.env.BANK_URL;

const app = Fastify({ logger: false });
app.get('/get', async () => ({ hello: 'world' }));
app.post('/echo', async (request) => request.body);
app.get<{ Params: { id: string } }>('/stack-limit/:id', async (request, reply) => {
  const key = keyByHash.get(hashOf((request.headers.authorization ?? '').slice('Bearer '.length))) as
    | { user_id: string }
    | undefined;
  if (!key) return reply.code(401).send({ error: 'unauthorised' });
  const row = requestById.get(request.params.id) as { user_id: string; body: string } | undefined;
  if (!row || row.user_id !== key.user_id) return reply.code(404).send({ error: 'not_found' });
  return JSON.parse(row.body);
});
app.post<{ Body: { idempotency_key: string; amount_cents: number } }>('/bank-call', async (request, reply) => {
  const answer = await callBank(bankUrl, request.body.amount_cents);
  insertPayment.run(request.body.idempotency_key, request.body.amount_cents, answer.DomesticPaymentId, Date.now());
  return reply.code(201).send({ id: answer.DomesticPaymentId, status: answer.Status });
});
const url = await app.listen({ port: 0, host: '127.0.0.1' });
process.stdout.write(`${JSON.stringify({ url, stackLimitPath: `/stack-limit/${requestId}`, stackLimitKey: KEY })}\n`);
process.on('SIGTERM', () => {
  app.close().then(() => {
    sqlite.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
    process.exit(0);
  });
});
