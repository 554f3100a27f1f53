/**
 * The one HTTP exchange of a webhook attempt: POST the body, a hard limit on the whole exchange (a 2xx head within it
 * is a success, whatever its body does after: the excerpt is what arrived by then), no redirects, and
 * (for live integrations) the server-side request forgery guard, checked on the address actually connected to:
 * after DNS, so a name that resolves (or rebinds) to a loopback, private or link-local address is refused.
 * Never throws: every outcome is a SendResult the caller records as an attempt.
 */
import http from 'node:http';
import https from 'node:https';
import { ATTEMPT_TIMEOUT_MS, RESPONSE_EXCERPT_BYTES } from '../domain/webhooks';
import { defaultResolver, GuardRefusal, lookupThrough, refusalOf, type Resolver } from './address-guard';

export { type Resolver };

interface SendRequest {
  url: string;
  body: string;
  headers: Record<string, string>;
  /** Apply the SSRF guard (live integrations). */
  guard: boolean;
  /** Called once the request has been handed to the network, or has failed before it could be. */
  onSent?: () => void;
}

interface SendResult {
  ok: boolean;
  /** HTTP status of the response, when there was one. */
  status: number | null;
  /** Why there was no 2xx answer: the connection error, the time-out, the guard's refusal, or the status. */
  error: string | null;
  /** The first bytes of the response body. */
  excerpt: string | null;
  durationMs: number;
}

export interface Sender {
  send(req: SendRequest): Promise<SendResult>;
  close(): void;
}

export function createSender(opts: { resolver?: Resolver; timeoutMs?: number } = {}): Sender {
  const resolver = opts.resolver ?? defaultResolver;
  const timeoutMs = opts.timeoutMs ?? ATTEMPT_TIMEOUT_MS;

  const guardedLookup = lookupThrough(resolver, true);
  const plainLookup = lookupThrough(resolver, false);
  // Separate pools, so a connection opened without the guard is never reused by a guarded delivery.
  const agent = { keepAlive: true, maxSockets: 256, maxFreeSockets: 64, timeout: 30_000 };
  const agents = {
    guarded: { http: new http.Agent({ ...agent, lookup: guardedLookup }), https: new https.Agent({ ...agent, lookup: guardedLookup }) },
    open: { http: new http.Agent({ ...agent, lookup: plainLookup }), https: new https.Agent({ ...agent, lookup: plainLookup }) },
  };

  function send(req: SendRequest): Promise<SendResult> {
    const started = performance.now();
    let sent = false;
    const markSent = () => {
      if (sent) return;
      sent = true;
      req.onSent?.();
    };
    const done = (r: Omit<SendResult, 'durationMs'>): SendResult => {
      markSent();
      return { ...r, durationMs: Math.round(performance.now() - started) };
    };
    let url: URL;
    try {
      url = new URL(req.url);
    } catch {
      return Promise.resolve(done({ ok: false, status: null, error: `invalid URL ${req.url}`, excerpt: null }));
    }
    // An IP literal is connected to without a lookup, so it is checked here.
    const refusal = refusalOf(url, req.guard);
    if (refusal) return Promise.resolve(done({ ok: false, status: null, error: refusal, excerpt: null }));
    const pool = req.guard ? agents.guarded : agents.open;
    const isHttps = url.protocol === 'https:';
    const mod = isHttps ? https : http;

    return new Promise<SendResult>((resolve) => {
      let settled = false;
      const finish = (r: Omit<SendResult, 'durationMs'>) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(done(r));
      };
      const request = mod.request(url, {
        method: 'POST',
        agent: isHttps ? pool.https : pool.http,
        headers: { ...req.headers, 'content-length': String(Buffer.byteLength(req.body)) },
      });
      /** Ends the exchange with the response as read so far, once its head is in. */
      let answered: (() => void) | null = null;
      // One limit for the whole exchange: connecting, sending, the response head and the excerpt. A receiver that
      // answered within it has answered (SPEC: any 2xx within 10 seconds), even if its body is still coming.
      const timer = setTimeout(() => {
        if (answered) answered();
        else finish({ ok: false, status: null, error: `timed out after ${timeoutMs / 1000} s`, excerpt: null });
        request.destroy();
      }, timeoutMs);
      // Handed to the network: on a pooled, connected socket the request is written as soon as it is given the
      // socket (in the same tick, before anything queued after it), so the next may start at once; on a new
      // connection only once the request has been written (a request on a pooled socket could overtake it).
      request.once('socket', (socket) => {
        if (!socket.connecting) markSent();
      });
      request.once('finish', markSent);
      request.once('error', (err: Error & { code?: string }) => {
        const reason = err instanceof GuardRefusal ? err.message : `${err.code ?? err.name}: ${err.message}`;
        finish({ ok: false, status: null, error: reason, excerpt: null });
      });
      request.once('response', (res) => {
        const status = res.statusCode ?? 0;
        const chunks: Buffer[] = [];
        let size = 0;
        const complete = () => {
          // As text Postgres can hold: a NUL (a binary or compressed body) would make the attempt's record fail, and
          // with it the record of a success.
          const excerpt = Buffer.concat(chunks)
            .subarray(0, RESPONSE_EXCERPT_BYTES)
            .toString('utf8')
            .replace(/\u0000/g, '\ufffd');
          const ok = status >= 200 && status < 300;
          finish({ ok, status, error: ok ? null : `HTTP ${status}`, excerpt });
        };
        res.on('data', (chunk: Buffer) => {
          if (size < RESPONSE_EXCERPT_BYTES) chunks.push(chunk);
          size += chunk.length;
          // Enough read: no need to wait for (or pool the socket of) a large body.
          if (size > 64 * 1024) {
            complete();
            res.destroy();
          }
        });
        answered = complete;
        res.once('end', complete);
        res.once('error', complete);
        res.once('aborted', complete);
      });
      request.end(req.body);
    });
  }

  return {
    send,
    close() {
      for (const p of Object.values(agents)) {
        p.http.destroy();
        p.https.destroy();
      }
    },
  };
}
