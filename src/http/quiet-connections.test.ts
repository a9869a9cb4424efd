import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { closeQuietConnectionsOnClose } from './quiet-connections.ts';

// A closing server ends the connections on which nothing was ever sent (Node's close would wait for
// them for ever), and leaves a call begun, even half sent, or one sent as the close began, to finish.

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function listening(t: TestContext, server: http.Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => server.closeAllConnections());
  return (server.address() as net.AddressInfo).port;
}

/** A connection and everything it is sent, settled when the server closes it. */
async function connect(port: number, secure = false) {
  const socket = secure
    ? tls.connect({ port, host: '127.0.0.1', rejectUnauthorized: false })
    : net.connect(port, '127.0.0.1');
  await new Promise((resolve, reject) =>
    socket.once(secure ? 'secureConnect' : 'connect', resolve).once('error', reject),
  );
  let text = '';
  socket.setEncoding('utf8').on('data', (chunk) => (text += chunk));
  socket.on('error', () => {});
  const closed = new Promise<string>((resolve) => socket.once('close', () => resolve(text)));
  return { socket, closed };
}

/** The server's close, or 'still open' when it has not finished within `ms`. */
async function closeWithin(server: http.Server, ms: number): Promise<string> {
  const closed = new Promise<string>((resolve) => server.close(() => resolve('closed')));
  return Promise.race([closed, sleep(ms).then(() => 'still open')]);
}

test('a silent connection is ended when the server closes; a half-sent call finishes first', async (t) => {
  const server = http.createServer((_request, response) => response.end('answered'));
  const quiet = closeQuietConnectionsOnClose(server);
  const port = await listening(t, server);
  const silent = await connect(port);
  const halfSent = await connect(port);
  halfSent.socket.write('GET / HTTP/1.1\r\nHost: x\r\n');
  await sleep(600);

  quiet.sweep();
  const closing = closeWithin(server, 5000);
  assert.equal(await Promise.race([silent.closed, sleep(3000).then(() => 'still open')]), '');
  await sleep(300);
  assert.equal(halfSent.socket.destroyed, false, 'the half-sent call is left to finish');
  // as the service answers while it stops (src/app.ts), the connection closes after its reply
  halfSent.socket.write('Connection: close\r\n\r\n');
  assert.match(await halfSent.closed, /^HTTP\/1\.1 200 OK[\s\S]*answered$/);
  assert.equal(await closing, 'closed');
});

test('a call sent on a connection opened as the close begins is answered, not cut', async (t) => {
  const server = http.createServer((_request, response) => response.end('answered'));
  const quiet = closeQuietConnectionsOnClose(server);
  const port = await listening(t, server);
  const late = await connect(port);
  quiet.sweep();
  const closing = closeWithin(server, 5000);
  late.socket.write('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
  assert.match(await late.closed, /^HTTP\/1\.1 200 OK/);
  assert.equal(await closing, 'closed');
});

test('over TLS, a connection that finished its handshake but sent no call is ended too', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tono-quiet-tls-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:P-256',
        '-nodes',
        '-subj',
        '/CN=127.0.0.1',
      ].concat(['-days', '1', '-keyout', path.join(dir, 'key.pem'), '-out', path.join(dir, 'cert.pem')]),
      { stdio: 'ignore' },
    );
  } catch {
    t.skip('openssl is not installed');
    return;
  }
  const server = https.createServer(
    { key: fs.readFileSync(path.join(dir, 'key.pem')), cert: fs.readFileSync(path.join(dir, 'cert.pem')) },
    (_request, response) => response.end('answered'),
  );
  const quiet = closeQuietConnectionsOnClose(server);
  const port = await listening(t, server);
  const silent = await connect(port, true);
  await sleep(600);
  quiet.sweep();
  const closing = closeWithin(server, 5000);
  assert.equal(await Promise.race([silent.closed, sleep(3000).then(() => 'still open')]), '');
  assert.equal(await closing, 'closed');
});
