/**
 * The Entrata-style connector's lookup by id (the deletion check) against a source, faked through the connector's
 * injectable fetch, that serves smaller pages than asked for: every record it has must come back, or a full sync
 * would soft-delete the ones on its later pages. And against sources whose paging makes no sense: an error or an
 * answer, never an endless loop.
 */
import { describe, expect, it } from 'vitest';
import { createConnector, SourcePermanentError } from '../../source';

interface Source {
  /** The leases it has, by native id. */
  has: Set<number>;
  /** The most records it serves on one page, whatever per_page asks for. */
  cap: number;
  /** What its pagination says, given what it truly served; the truth when absent. */
  pagination?: (truth: { page_no: number; per_page: number; total_count: number }) => Record<string, unknown>;
  /** Serve page 1 whatever page_no asks for. */
  ignoresPageNo?: boolean;
}

/** A connector over a fake `getLeases` with the id filter and capped pages; `asked` holds each request's params. */
function wired(source: Source) {
  const asked: { page_no: number; per_page: number; ids: number }[] = [];
  const fetchFn: typeof fetch = async (_input, init) => {
    const { params } = (JSON.parse(String(init?.body)) as { method: { params: { leaseIds: string; page_no: number; per_page: number } } }).method;
    asked.push({ page_no: params.page_no, per_page: params.per_page, ids: params.leaseIds.split(',').length });
    const matching = params.leaseIds
      .split(',')
      .map(Number)
      .filter((id) => source.has.has(id))
      .sort((a, b) => a - b);
    const perPage = Math.min(params.per_page, source.cap);
    const page = source.ignoresPageNo ? 1 : params.page_no;
    const served = matching.slice((page - 1) * perPage, page * perPage);
    const truth = { page_no: params.page_no, per_page: perPage, total_count: matching.length };
    const result = {
      leases: { lease: served.map((leaseId) => ({ leaseId, rent: '1000.00' })) },
      pagination: source.pagination ? source.pagination(truth) : truth,
    };
    return new Response(JSON.stringify({ response: { code: 200, result } }), { status: 200, headers: { 'content-type': 'application/json' } });
  };
  const conn = createConnector({ base_url: 'http://pms.test', api_key: 'k' }, { fetch: fetchFn, backoffMs: 1, sleep: async () => {} });
  return { conn, asked };
}

const ids = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i);
const xIds = (list: number[]) => list.map(String);

describe('looking leases up by id at a source that serves at most 500 a page', () => {
  it('returns all 800 present records of an 800-id lookup, reading the second page', async () => {
    const present = ids(5000001, 800);
    const { conn, asked } = wired({ has: new Set(present), cap: 500 });
    const got = await conn.readByIds('lease', xIds(present));
    expect(got.skipped).toEqual([]);
    expect(got.records.map((r) => r.x_id)).toEqual(xIds(present));
    expect(asked).toEqual([
      { page_no: 1, per_page: 800, ids: 800 },
      { page_no: 2, per_page: 800, ids: 800 },
    ]);
  });

  it('returns the present ones only, once each, when some of the ids are gone', async () => {
    const wanted = ids(5000001, 900);
    const present = wanted.filter((id) => id % 9 !== 0);
    const { conn } = wired({ has: new Set(present), cap: 500 });
    const got = await conn.readByIds('lease', xIds(wanted));
    expect(got.records.map((r) => r.x_id)).toEqual(xIds(present));
  });

  it('stops after one page when the source reports no pagination at all, as before', async () => {
    const present = ids(5000001, 20);
    const { conn, asked } = wired({ has: new Set(present), cap: 500, pagination: () => ({}) });
    expect((await conn.readByIds('lease', xIds(present))).records).toHaveLength(20);
    expect(asked).toHaveLength(1);
  });
});

describe('looking leases up by id at a source whose paging makes no sense', () => {
  it('ends when the source claims far more records than were asked for', async () => {
    const present = ids(5000001, 800);
    const { conn, asked } = wired({ has: new Set(present), cap: 500, pagination: (t) => ({ ...t, per_page: 0, total_count: 1e12 }) });
    const got = await conn.readByIds('lease', xIds(present));
    expect(got.records.map((r) => r.x_id)).toEqual(xIds(present));
    expect(asked).toHaveLength(2);
  });

  it('fails permanently, rather than loop or call records gone, when every page repeats the first', async () => {
    const present = ids(5000001, 800);
    const { conn, asked } = wired({ has: new Set(present), cap: 500, ignoresPageNo: true });
    const err = await conn.readByIds('lease', xIds(present)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SourcePermanentError);
    expect((err as Error).message).toMatch(/getLeases answered page 2 of an id lookup with records of earlier pages only/);
    expect(asked).toHaveLength(2);
  });
});
