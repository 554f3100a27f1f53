/**
 * The answers to what Node's HTTP parser refuses before the app sees a request, as a client reads them off the
 * socket. A 431 and a 400 are also checked over a real connection (test/integration/api-app.test.ts); a request
 * timeout takes Node's connection sweep (30 s at the least) to happen, so its answer is checked here.
 */
import { describe, expect, it } from 'vitest';
import { clientErrorResponse } from '../../api/server';

const bases = { DOCS_BASE_URL: 'https://docs.example.com', PROBLEM_BASE_URL: 'https://problems.example.com' };

function parse(raw: string) {
  const at = raw.indexOf('\r\n\r\n');
  const [status, ...headers] = raw.slice(0, at).split('\r\n');
  const body = raw.slice(at + 4);
  return {
    status,
    headers: Object.fromEntries(headers.map((h) => h.split(': ') as [string, string])),
    body,
    json: JSON.parse(body) as Record<string, unknown>,
  };
}

const error = (code: string, message: string, rawPacket?: string) =>
  Object.assign(new Error(message), { code, rawPacket: rawPacket === undefined ? undefined : Buffer.from(rawPacket, 'latin1') });

describe('clientErrorResponse', () => {
  it('is a whole problem+json response that closes the connection, with a fresh request id', () => {
    const r = parse(
      clientErrorResponse(error('HPE_HEADER_OVERFLOW', 'Parse Error: Header overflow', 'GET /v1/leases?limit=5 HTTP/1.1\r\nHost: x\r\nX-Big: aaaa'), bases),
    );
    expect(r.status).toBe('HTTP/1.1 431 Request Header Fields Too Large');
    expect(r.headers).toEqual({
      'content-type': 'application/problem+json',
      'content-length': String(Buffer.byteLength(r.body)),
      'x-request-id': expect.stringMatching(/^req_[0-9A-HJKMNP-TV-Z]{26}$/),
      connection: 'close',
    });
    expect(r.json).toEqual({
      type: 'https://docs.example.com/errors/request_header_fields_too_large',
      title: 'Request Header Fields Too Large',
      status: 431,
      detail: expect.stringContaining('larger than the'),
      instance: '/v1/leases',
      request_id: r.headers['x-request-id'],
    });
    expect(parse(clientErrorResponse(error('HPE_HEADER_OVERFLOW', 'x'), bases)).headers['x-request-id']).not.toBe(r.headers['x-request-id']);
  });

  it('408 for a request that did not arrive in time, 413 for chunk extensions too large, 400 for anything else', () => {
    for (const [code, status, slug] of [
      ['ERR_HTTP_REQUEST_TIMEOUT', 'HTTP/1.1 408 Request Timeout', 'request_timeout'],
      ['HPE_CHUNK_EXTENSIONS_OVERFLOW', 'HTTP/1.1 413 Payload Too Large', 'payload_too_large'],
      ['HPE_INVALID_METHOD', 'HTTP/1.1 400 Bad Request', 'bad_request'],
      ['HPE_SOMETHING_NEW', 'HTTP/1.1 400 Bad Request', 'bad_request'],
    ] as const) {
      const r = parse(clientErrorResponse(error(code, 'Parse Error: it', 'POST /v1/leases HTTP/1.1\r\n'), bases));
      expect(r.status, code).toBe(status);
      expect(r.json, code).toMatchObject({ type: `https://docs.example.com/errors/${slug}`, instance: '/v1/leases' });
    }
  });

  it('does not echo a path it could not read whole', () => {
    for (const raw of [undefined, '', `GET /${'p'.repeat(20_000)} HTTP/1.1\r\n`, `GET /${'p'.repeat(20_000)}`, '\u0000\u0001garbage\r\n']) {
      expect(parse(clientErrorResponse(error('HPE_HEADER_OVERFLOW', 'x', raw), bases)).json.instance).toBe('');
    }
  });
});
