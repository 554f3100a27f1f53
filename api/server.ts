/**
 * The API's HTTP server: @hono/node-server's, plus problem+json answers to the requests Node's HTTP parser refuses
 * before the app ever sees them (a request line and headers over the header size limit, bytes that are not HTTP/1.1,
 * a request that does not arrive in time), which Node would otherwise answer with a bare status line. api/main.ts (and
 * so the compiled dist/api.mjs) and the tests' server both listen through serveApi().
 */
import { createServer, maxHeaderSize, STATUS_CODES, type RequestListener, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { getRequestListener, RequestError, type ServerType } from '@hono/node-server';
import type { FastReads } from './fast-reads';
import { requestIdFrom } from './middleware/request-id';
import { ApiError, problemBody, type ProblemBases } from './problem';

export interface ServeOptions {
  fetch: (request: Request) => Response | Promise<Response>;
  hostname: string;
  port: number;
  bases: ProblemBases;
  /** The app's read fast path (App.reads), given each request before the app. */
  reads?: FastReads;
}

/**
 * @hono/node-server's request listener on node:http, with the read fast path in front, and every refusal answered as
 * problem+json with a request id: the parser's (below), and those Node or the adapter would answer with a bare status
 * (a request without a Host header or with an invalid one, a backslash in the path, an absolute URL of another
 * scheme). An `Expect` other than `100-continue` is served as if it were absent (RFC 9110 lets a server do so; Node
 * would answer a bare 417).
 */
export function serveApi(opts: ServeOptions, onListening?: (info: AddressInfo) => void): ServerType {
  const { reads } = opts;
  const listener = getRequestListener(opts.fetch, {
    hostname: opts.hostname,
    errorHandler: (err) => refusedResponse(err, opts.bases),
  });
  // Node's own check of the Host header answers a bare 400: this one answers as every refusal is answered.
  const app: RequestListener = (req, res) => {
    if (req.headers.host === undefined && req.httpVersion === '1.1') {
      const { status, headers, body } = refusal(opts.bases, new ApiError('bad_request', 'An HTTP/1.1 request carries a Host header.'));
      res.writeHead(status, headers).end(body);
      return;
    }
    if (!reads?.(req, res)) void listener(req, res);
  };
  const server = createServer({ requireHostHeader: false }, app);
  server.on('checkExpectation', app);
  answerClientErrors(server, opts.bases);
  server.listen(opts.port, opts.hostname, () => onListening?.(server.address() as AddressInfo));
  return server;
}

/** The status, headers and body of a refusal answered before the app (with a request id of its own). */
function refusal(bases: ProblemBases, problem: ApiError, instance = ''): { status: number; headers: Record<string, string>; body: string } {
  const requestId = requestIdFrom(undefined);
  const body = JSON.stringify(problemBody(bases, problem, instance, requestId));
  const headers = { 'content-type': 'application/problem+json', 'content-length': String(Buffer.byteLength(body)), 'x-request-id': requestId };
  return { status: problem.status, headers, body };
}

/** The answer to a request the adapter could not make a Request of (a 400), or to a failure no handler caught (a 500). */
function refusedResponse(err: unknown, bases: ProblemBases): Response {
  const problem =
    err instanceof RequestError
      ? new ApiError('bad_request', `The request cannot be served: ${err.message.toLowerCase()}.`)
      : new ApiError('internal_error', 'An unexpected error occurred.');
  const { status, headers, body } = refusal(bases, problem);
  return new Response(body, { status, headers });
}

/** Node's `clientError`: Node parsed `rawPacket` no further than `code`. */
type ClientError = Error & { code?: string; rawPacket?: Buffer };

/** Longest request path echoed as `instance`: the path itself may be what overflowed. */
const MAX_INSTANCE = 2048;

/** The request's path when its request line arrived whole, else '' (nothing could be read of it). */
function instanceOf(raw: Buffer | undefined): string {
  const line = /^[A-Z]+ (\/[\x21-\x7e]*) HTTP\/1\.[01]\r?\n/.exec(raw?.subarray(0, MAX_INSTANCE + 64).toString('latin1') ?? '');
  const path = line?.[1]?.split('?')[0] ?? '';
  return path.length <= MAX_INSTANCE ? path : '';
}

function problemOf(err: ClientError): ApiError {
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW':
      return new ApiError(
        'request_header_fields_too_large',
        `The request line and headers are larger than the ${maxHeaderSize / 1024} KiB this service reads. Send a shorter URL or fewer, smaller headers.`,
      );
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return new ApiError('payload_too_large', 'The chunk extensions of the request body are too large.');
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new ApiError('request_timeout', 'The request did not arrive in full in time. Send it again on a new connection.');
    default:
      return new ApiError('bad_request', `The request is not valid HTTP/1.1 (${err.message}).`);
  }
}

/** The whole HTTP/1.1 response to a request the parser refused; the connection ends with it. */
export function clientErrorResponse(err: ClientError, bases: ProblemBases): string {
  const { status, headers, body } = refusal(bases, problemOf(err), instanceOf(err.rawPacket));
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
  return `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n${lines.join('')}connection: close\r\n\r\n${body}`;
}

/** How long a refused connection may stay open while the client reads the answer. */
const LINGER_MS = 5_000;

/**
 * Answers what Node's parser refuses as every other error is answered. Listening to `clientError` replaces Node's own
 * answer, so this does what Node does otherwise: nothing on a reset or closed socket, and nothing written into a
 * response already under way (that would corrupt it; the socket is only closed).
 */
function answerClientErrors(server: Server, bases: ProblemBases): void {
  server.on('clientError', (err: ClientError, socket: Socket) => {
    const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (err.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
      socket.destroy();
      return;
    }
    // Closing at once with the rest of an oversized request unread would make the kernel reset the connection, and
    // a client may lose the answer with it: send it, read and drop what still comes, close when the client does.
    socket.end(clientErrorResponse(err, bases));
    socket.resume();
    socket.setTimeout(LINGER_MS, () => socket.destroy());
  });
}
