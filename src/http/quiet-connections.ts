import type { IncomingMessage, Server } from 'node:http';
import type { Socket } from 'node:net';

/** How often, while the server closes, its connections are looked at again. */
const SWEEP_EVERY_MS = 250;
/**
 * How long a connection may have been open, silent, before it counts as quiet: a client that
 * connected as the stop began may have its call on the wire already.
 */
const QUIET_AFTER_MS = 500;

type Connection = { socket: Socket; openedAt: number; requested: boolean };

/**
 * Node's server.close() ends idle keep-alive connections, but not one on which the client has sent
 * nothing yet: a browser's pre-opened connection, a load balancer's pool, or anyone who opens a
 * socket and waits. The close waits for each such connection for as long as the client keeps it,
 * which can be for ever, and so a stopping process never exits. Once the server starts closing,
 * each connection that has been open half a second without sending a byte is destroyed, looked for
 * until the server has closed; one with a call begun on it (even half its headers) is left to finish
 * it. Over TLS a pre-opened connection has sent its handshake, so there quiet means no call yet.
 */
export function closeQuietConnectionsOnClose(server: Server): { sweep(): void } {
  const tls = 'setSecureContext' in server;
  const connections = new Map<Socket, Connection>();
  server.on(tls ? 'secureConnection' : 'connection', (socket: Socket) => {
    connections.set(socket, { socket, openedAt: Date.now(), requested: false });
    socket.once('close', () => connections.delete(socket));
  });
  if (tls)
    server.on('request', (request: IncomingMessage) => {
      const connection = connections.get(request.socket);
      if (connection) connection.requested = true;
    });
  const quiet = (connection: Connection, now: number) =>
    now - connection.openedAt >= QUIET_AFTER_MS && (tls ? !connection.requested : connection.socket.bytesRead === 0);
  const destroyQuiet = () => {
    const now = Date.now();
    for (const connection of connections.values()) if (quiet(connection, now)) connection.socket.destroy();
  };
  let sweeping: NodeJS.Timeout | null = null;
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

/** The same for a Fastify app: its quiet connections are closed as it begins to close (preClose). */
export function closeQuietConnectionsOf(app: {
  server: Server;
  addHook(name: 'preClose', hook: () => Promise<void>): unknown;
}): void {
  const quiet = closeQuietConnectionsOnClose(app.server);
  app.addHook('preClose', async () => quiet.sweep());
}
