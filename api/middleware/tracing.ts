/**
 * The root span of a request's trace (only when tracing is on): named by method and route template, with the
 * request id (`propsync.request_id`, the x-request-id answered) and the status. Never the raw path or the query,
 * which may carry a resident's email or name as a filter.
 */
import type { MiddlewareHandler } from 'hono';
import { SpanStatusCode } from '@opentelemetry/api';
import { withServerSpan } from '../../observability/tracing';
import { routeTemplateOf } from './metrics';

export function requestTracing(): MiddlewareHandler {
  return (c, next) =>
    withServerSpan(c.req.method, { 'http.request.method': c.req.method, 'propsync.request_id': c.get('requestId' as never) as string }, async (span) => {
      await next();
      const route = routeTemplateOf(c);
      span.updateName(`${c.req.method} ${route}`);
      span.setAttributes({ 'http.route': route, 'http.response.status_code': c.res.status });
      if (c.res.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    });
}
