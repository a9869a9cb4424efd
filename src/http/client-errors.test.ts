import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { buildTestApp, createTestMerchant } from '../../test/helpers.ts';

// Requests Node's HTTP parser refuses, sent as raw bytes over a real socket.

function rawExchange(port: number, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let reply = '';
    socket
      .setEncoding('utf8')
      .on('data', (chunk) => (reply += chunk))
      .on('end', () => resolve(reply))
      .on('close', () => resolve(reply))
      .on('error', reject);
    socket.write(bytes);
  });
}

test('HTTP framing errors are answered in the API error shape, and the connection closed', async (t) => {
  const app = await buildTestApp(t);
  await app.app.listen({ port: 0, host: '127.0.0.1' });
  const port = (app.app.server.address() as net.AddressInfo).port;
  // With a valid key, so the request gets as far as its body (without one, the 401 comes first).
  const { testKey } = await createTestMerchant(app);
  const cases = [
    [
      'a bad chunk',
      `POST /v1/requests HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${testKey}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`,
    ],
    [
      'Content-Length with Transfer-Encoding',
      'POST /v1/requests HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n',
    ],
    ['a broken request line', 'GET /v1/requests HTTP/9\r\n\r\n'],
  ];
  for (const [name, bytes] of cases) {
    const reply = await rawExchange(port, bytes);
    const [head, body] = reply.split('\r\n\r\n');
    assert.match(head, /^HTTP\/1\.1 400 Bad Request\r\n/, name);
    assert.match(head, /Content-Type: application\/json; charset=utf-8/, name);
    assert.match(head, /Connection: close/, name);
    const parsed = JSON.parse(body);
    assert.equal(parsed.code, 'bad_request.malformed_http', name);
    assert.match(parsed.message, /^The request is not valid HTTP\/1\.1/, name);
    assert.deepEqual(parsed.params, {}, name);
  }
  const huge = await rawExchange(port, `GET /v1/requests HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
  assert.match(huge, /^HTTP\/1\.1 431 /);
  assert.equal(JSON.parse(huge.split('\r\n\r\n')[1]).code, 'headers_too_large');
});
