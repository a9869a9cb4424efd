import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/** How often, while the server closes, connections opened since the last look are looked at. */
const SWEEP_EVERY_MS = 1000;

/**
 * Node's server.close() ends idle keep-alive connections, but not one on which the client has sent
 * nothing yet: a browser's pre-opened connection, a load balancer's pool, or anyone who opens a
 * socket and waits. The close waits for each such connection for as long as the client keeps it,
 * which can be for ever, and so a stopping process never exits. When the server starts closing, each
 * connection that has not sent a byte is destroyed, at once and again each second until the server
 * has closed; a connection with a call begun on it (even half its headers) is left to finish it.
 */
export function closeQuietConnectionsOnClose(server: Server): { sweep(): void } {
  const connections = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    connections.add(socket);
    socket.once('close', () => connections.delete(socket));
  });
  let sweeping: NodeJS.Timeout | null = null;
  const destroyQuiet = () => {
    for (const socket of connections) if (socket.bytesRead === 0) socket.destroy();
  };
  return {
    sweep() {
      destroyQuiet();
      if (sweeping || !server.listening) return;
      sweeping = setInterval(destroyQuiet, SWEEP_EVERY_MS);
      sweeping.unref();
      server.once('close', () => clearInterval(sweeping!));
    },
  };
}
