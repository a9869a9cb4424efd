// A webhook receiver in its own process for the delivery bench: acknowledges with 204 and records
// when each event first arrived (epoch ms with sub-ms precision, comparable across processes).
// GET /arrivals lists them; POST /reset forgets them between the bench's steps.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

let arrivals = new Map<string, number>();
const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/count') return void res.end(String(arrivals.size));
  if (req.method === 'GET' && req.url === '/arrivals')
    return void res.setHeader('content-type', 'application/json').end(JSON.stringify(Object.fromEntries(arrivals)));
  if (req.method === 'POST' && req.url === '/reset') {
    arrivals = new Map();
    return void res.writeHead(204).end();
  }
  const id = req.headers['x-service-event-id'] as string;
  if (id && !arrivals.has(id)) arrivals.set(id, performance.timeOrigin + performance.now());
  req.resume();
  req.on('end', () => res.writeHead(204).end());
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })}\n`);
});
