// SIGTERM stops taking work and finishes what is running (docs/configuration.md): /readyz answers
// 503 and the server takes no new connection at once, while a call in flight and a job in flight
// (a webhook delivery the receiver holds) both finish before the process exits 0. A connection on
// which nothing was ever sent (a browser's or a load balancer's pre-opened one) does not hold it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { apiCall, merchantByCli, processStore, startService } from '../process.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A raw connection to the service, to send a call in pieces and read all it answers until it closes. */
async function connect(baseUrl: string) {
  const url = new URL(baseUrl);
  const socket = net.connect(Number(url.port), url.hostname);
  await new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  let text = '';
  socket.setEncoding('utf8').on('data', (chunk) => (text += chunk));
  const closed = new Promise<string>((resolve) => socket.once('close', () => resolve(text)));
  return { socket, closed, text: () => text };
}

/** A status, or the connection error's code when the server no longer listens. */
const statusOrRefusal = (call: Promise<{ status: number }>) =>
  call.then(
    (response) => response.status,
    (error: NodeJS.ErrnoException) => error.code ?? error.cause,
  );

test('SIGTERM: not ready and no new calls at once; the call and the job in flight finish, then exit 0', async (t) => {
  // A webhook receiver that holds each delivery until the test lets it go.
  const held: http.ServerResponse[] = [];
  const receiver = http.createServer((request, response) => {
    request.resume();
    request.on('end', () => held.push(response));
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    receiver.closeAllConnections();
    receiver.close();
  });
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

  const store = await processStore(t, { migrated: true });
  const service = await startService(t, store, { DEMO_MERCHANT: 'false', LOG_LEVEL: 'silent' });
  const merchant = await merchantByCli(store, 'Stopping', 'stopping@example.com');
  const key = merchant.test_key;
  const requestBody = { bank_account_id: merchant.bank_account_id, amount: '1.00 NZD', message: 'held' };
  const hook = await apiCall(service.baseUrl, key, 'POST', '/v1/webhooks', {
    url: receiverUrl,
    events: ['request.created'],
  });
  assert.equal(hook.status, 201, JSON.stringify(hook.body));
  assert.equal((await apiCall(service.baseUrl, key, 'POST', '/v1/requests', requestBody)).status, 201);
  for (let waited = 0; held.length === 0; waited += 50) {
    assert.ok(waited < 30_000, 'the delivery reaches the receiver');
    await sleep(50);
  }

  // A call in flight (its body not sent yet) and a connection with a call begun on it.
  const payload = JSON.stringify({ ...requestBody, message: 'in flight' });
  const inFlight = await connect(service.baseUrl);
  inFlight.socket.write(
    `POST /v1/requests HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(payload)}\r\n\r\n`,
  );
  const probe = await connect(service.baseUrl);
  probe.socket.write('GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\n');
  const silent = await connect(service.baseUrl);
  await sleep(300);

  service.child.kill('SIGTERM');
  await sleep(500);
  assert.notEqual(
    await statusOrRefusal(fetch(`${service.baseUrl}/readyz`)),
    200,
    'a new connection is not told it is ready',
  );
  assert.notEqual(
    await statusOrRefusal(apiCall(service.baseUrl, key, 'POST', '/v1/requests', requestBody)),
    201,
    'no new work is taken',
  );
  probe.socket.write('\r\n');
  assert.match(await probe.closed, /^HTTP\/1\.1 503 /);
  assert.equal(
    await Promise.race([silent.closed, sleep(10_000).then(() => 'still open after 10 s')]),
    '',
    'the silent connection is closed by the server, unanswered',
  );

  // The call in flight finishes, and its keep-alive connection is closed after it.
  inFlight.socket.write(payload);
  const answered = await inFlight.closed;
  assert.match(answered, /^HTTP\/1\.1 201 /);
  assert.match(answered, /\r\nconnection: close\r\n/i);

  // The job in flight holds the exit until it finishes.
  await sleep(300);
  assert.equal(service.child.exitCode, null, 'the process waits for the delivery in flight');
  for (const response of held) response.writeHead(204).end();
  assert.equal(await service.exited, 0);
});
