import type { Server as HttpServer, IncomingMessage, ServerResponse } from 'node:http';
import { createServer as createHttp2Server } from 'node:http2';
import type { Server, Socket } from 'node:net';
import { createServer as createNetServer } from 'node:net';

// HTTP/1.1 and HTTP/2 over cleartext with prior knowledge (h2c), on one port: each
// connection's first bytes tell which. An HTTP/2 client opens with the connection preface
// (`PRI * HTTP/2.0\r\n...`); anything else is HTTP/1. The bytes read to decide are put back
// before the connection is handed to the server for its protocol, so both see it whole.

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

/**
 * A TCP server that hands each connection to `http1` or to an HTTP/2 server running `handler`
 * (Node's compatibility request and response, which the mock handles as HTTP/1's). Its
 * `connection` event sees every TCP connection once; destroying the socket ends either kind.
 */
export function listenH1AndH2c(http1: HttpServer, handler: (req: IncomingMessage, res: ServerResponse) => void): Server {
  const http2 = createHttp2Server();
  http2.on('request', (req, res) => handler(req as unknown as IncomingMessage, res as unknown as ServerResponse));
  // noDelay as Node's HTTP servers set it: small event-stream frames must not wait on Nagle for an ACK.
  return createNetServer({ noDelay: true }, (socket) => sniff(socket, http1, http2));
}

function sniff(socket: Socket, http1: HttpServer, http2: { emit(event: 'connection', socket: Socket): boolean }): void {
  let seen: Buffer = Buffer.alloc(0);
  const onError = (): void => {
    socket.destroy();
  };
  const onData = (chunk: Buffer): void => {
    seen = seen.length === 0 ? chunk : Buffer.concat([seen, chunk]);
    const n = Math.min(seen.length, PREFACE.length);
    const isHttp2 = seen.subarray(0, n).equals(PREFACE.subarray(0, n));
    // A preface that has only begun to arrive cannot decide yet; at most 24 bytes are held.
    if (isHttp2 && n < PREFACE.length) return;
    socket.off('data', onData);
    socket.off('error', onError);
    socket.pause();
    socket.unshift(seen);
    // The HTTP/2 session reads what is buffered on its next tick, then the handle itself;
    // resuming here would flow the put-back preface to no listener and lose it.
    if (isHttp2) return void http2.emit('connection', socket);
    http1.emit('connection', socket);
    socket.resume();
  };
  socket.on('error', onError);
  socket.on('data', onData);
}
