import http from 'node:http';
import type { Socket } from 'node:net';
import { AppError } from '../shared/errors.ts';

// What Node's HTTP parser refuses before Fastify sees a request (a broken chunk, Content-Length
// together with Transfer-Encoding, oversized headers, a client too slow to send them) is answered
// in the API's error shape too, then the connection is closed: after a framing error nothing
// more on it can be trusted.

function errorFor(error: NodeJS.ErrnoException): AppError {
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT')
    return new AppError('request_timeout', 'The request was not received in time', {});
  if (error.code === 'HPE_HEADER_OVERFLOW')
    return new AppError('headers_too_large', 'The request headers are larger than the server accepts', {});
  const { reason } = error as NodeJS.ErrnoException & { reason?: unknown };
  const detail = typeof reason === 'string' ? `: ${reason}` : '';
  return new AppError('bad_request.malformed_http', `The request is not valid HTTP/1.1${detail}`, {});
}

export function clientErrorHandler(error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const appError = errorFor(error);
  const body = JSON.stringify(appError.toJSON());
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${appError.status} ${http.STATUS_CODES[appError.status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}
