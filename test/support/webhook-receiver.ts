// A real HTTP receiver on loopback for webhook tests: records every request as received (raw body
// bytes, headers, arrival time) and answers as the test says.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type Received = { at: number; headers: http.IncomingHttpHeaders; raw: Buffer; body: any };
export type Answer = { status: number; body?: string; delayMs?: number } | 'hang' | 'reset';

export type Receiver = {
  url: string;
  port: number;
  received: Received[];
  answer: (request: Received, index: number) => Answer;
  waitFor(count: number, timeoutMs?: number): Promise<Received[]>;
  close(): Promise<void>;
};

export async function startReceiver(answer: Receiver['answer'] = () => ({ status: 204 }), port = 0): Promise<Receiver> {
  const hanging = new Set<http.ServerResponse>();
  const receiver: Receiver = {
    url: '',
    port: 0,
    received: [],
    answer,
    async waitFor(count, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      while (receiver.received.length < count) {
        if (Date.now() > deadline)
          throw new Error(`receiver got ${receiver.received.length} of ${count} requests in ${timeoutMs} ms`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      return receiver.received;
    },
    async close() {
      for (const response of hanging) response.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      let body: any;
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {}
      const request: Received = { at: Date.now(), headers: req.headers, raw, body };
      const index = receiver.received.push(request) - 1;
      const reply = receiver.answer(request, index);
      if (reply === 'hang') {
        hanging.add(res);
        return;
      }
      if (reply === 'reset') {
        req.socket.destroy();
        return;
      }
      const send = () => res.writeHead(reply.status, { 'content-type': 'text/plain' }).end(reply.body ?? '');
      if (reply.delayMs) setTimeout(send, reply.delayMs);
      else send();
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  receiver.port = (server.address() as AddressInfo).port;
  receiver.url = `http://127.0.0.1:${receiver.port}/hook`;
  return receiver;
}
