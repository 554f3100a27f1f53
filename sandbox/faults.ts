/**
 * The fault controls, the same in every flavour: which of a company's faults apply to a request, counted once per
 * request they affect. A flavour renders the outcome on its wire (its own 429 body, the shared HTML 503 page).
 *
 * A fault scoped to `reads` or `writes` affects (and is counted against) only those requests; one scoped to `all`
 * affects every request, even one the flavour cannot classify. A slow read sleeps before it is served; a slow write
 * is applied (committed) first and answered after the delay, so a client that gives up sooner sees a timeout for a
 * write that was made, as with a real PMS behind a slow proxy.
 */
import { consumeFault, type Company, type Fault, type Sql } from './store';

export type RequestKind = 'read' | 'write';

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** What a proxy in front of a struggling PMS answers: an HTML page, not the API's JSON. */
export const UNAVAILABLE_HTML =
  '<html><head><title>503 Service Temporarily Unavailable</title></head><body><h1>Service Temporarily Unavailable</h1></body></html>';

/** The fault of a kind that applies to a request of this kind (undefined kind: a request the flavour cannot classify). */
function faultFor(company: Company, kind: Fault['kind'], request: RequestKind | undefined): Fault | undefined {
  const f = company.faults.find((x) => x.kind === kind);
  if (!f) return undefined;
  const scope = f.methods;
  return scope === 'all' || (scope === 'reads' && request === 'read') || (scope === 'writes' && request === 'write') ? f : undefined;
}

/**
 * Apply the company's transport faults to one request: say which one answers it (`unavailable`, `rate_limited`),
 * or how long to delay it. A read's delay is slept here; a write's is returned (`delayAfterMs`), to be slept after
 * the write is applied. When a fault answers, a write's delay has been slept already.
 */
export async function applyFaults(
  sql: Sql,
  company: Company,
  request: RequestKind | undefined,
  slowMs: number,
): Promise<{ answer?: 'unavailable' | 'rate_limited'; delayAfterMs?: number }> {
  const slow = faultFor(company, 'slow', request);
  let delayAfterMs: number | undefined;
  if (slow && (await consumeFault(sql, company.id, slow))) {
    const ms = slow.delay_ms ?? slowMs;
    if (request === 'write') delayAfterMs = ms;
    else await sleep(ms);
  }
  for (const kind of ['unavailable', 'rate_limited'] as const) {
    const f = faultFor(company, kind, request);
    if (f && (await consumeFault(sql, company.id, f))) {
      if (delayAfterMs !== undefined) await sleep(delayAfterMs);
      return { answer: kind };
    }
  }
  return { delayAfterMs };
}

/** Whether a `reject_writes` fault refuses this write (counting it). */
export async function rejectsWrite(sql: Sql, company: Company): Promise<boolean> {
  const f = company.faults.find((x) => x.kind === 'reject_writes');
  return f !== undefined && (await consumeFault(sql, company.id, f));
}
