// The far end of `bank_call_baseline`: a bare HTTP server in its own process that answers every
// POST with a small JSON body, as a bank's payment endpoint would, and does nothing else.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

let counter = 0;
const server = http.createServer((request, response) => {
  request.resume();
  request.on('end', () => {
    counter += 1;
    const body = JSON.stringify({
      Data: { DomesticPaymentId: `pay-${counter}`, Status: 'AcceptedSettlementCompleted' },
    });
    response
      .writeHead(201, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) })
      .end(body);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })}\n`);
});
