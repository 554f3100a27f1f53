/**
 * The root span of a request's trace (only when tracing is on): named by method and route template, with the
 * request id (`propsync.request_id`, the x-request-id answered) and the status. Never the raw path or the query,
 * which may carry a resident's email or name as a filter.
 *
 * A request that may start a workflow (any method but GET and HEAD: writes, admin actions) runs with its span
 * active, so the Temporal client's interceptor carries the trace into the workflow's headers. A GET or HEAD starts
 * no workflow and makes no child span in this process, so its span is recorded once it is answered, with the times
 * it started and ended, and never made active: the async context an active span needs (AsyncLocalStorage, whose
 * hooks then run for every promise and I/O callback of the process) is never switched on by reads. A process that
 * takes writes switches it on at its first write, as the Temporal client's own deadline does with tracing off.
 */
import type { MiddlewareHandler } from 'hono';
import { recordServerSpan, withServerSpan } from '../../observability/tracing';
import { routeTemplateOf } from './metrics';

export function requestTracing(): MiddlewareHandler {
  return async (c, next) => {
    const method = c.req.method;
    const requestId = c.get('requestId' as never) as string;
    if (method !== 'GET' && method !== 'HEAD') {
      return withServerSpan(method, requestId, async (span) => {
        await next();
        const route = routeTemplateOf(c);
        span.updateName(`${method} ${route}`);
        span.setAttribute('http.route', route);
        return c.res.status;
      });
    }
    const started = performance.now();
    try {
      await next();
    } finally {
      recordServerSpan(method, routeTemplateOf(c), requestId, c.res.status, started);
    }
  };
}
