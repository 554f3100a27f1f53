/**
 * The read benchmark's baseline: a bare node:http server with the same Postgres driver and pool size, answering the
 * two measured requests with the same SQL (same predicates in the same form, prepared) and the same JSON, and nothing
 * else: no auth, no rate limit, no validation, no framework. Run as its own process:
 * `node --import tsx bench/lib/baseline.ts <db url> <port> <organization id> <mode>`.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import postgres from 'postgres';

const [databaseUrl, portArg, organizationId, mode] = process.argv.slice(2);
if (!databaseUrl || !portArg || !organizationId || !mode) {
  console.error('usage: baseline.ts <database url> <port> <organization id> <mode>');
  process.exit(2);
}

const sql = postgres(databaseUrl, {
  max: 10,
  onnotice: () => {},
  connection: { application_name: 'propsync-bench-baseline' },
  types: {
    bigint: postgres.BigInt,
    // Dates stay YYYY-MM-DD strings, as the service shows them.
    date: { to: 1082, from: [1082], serialize: (x: string) => x, parse: (x: string) => x },
  },
});

type Row = Record<string, any>;
const iso = (d: Date | null) => (d ? d.toISOString() : null);
const money = (amount: bigint | null, currency: string | null) => (amount === null || currency === null ? null : { amount: Number(amount), currency });

function leaseJson(r: Row, people: { resident_id: string; x_id: string; role: string }[]) {
  return {
    id: r.id,
    x_id: r.x_id,
    organization_id: r.organization_id,
    integration_id: r.integration_id,
    property_id: r.property_id,
    unit_id: r.unit_id,
    resident_ids: people.map((p) => p.resident_id),
    residents: people,
    status: r.status,
    type: r.type,
    start_date: r.start_date,
    end_date: r.end_date,
    move_in_date: r.move_in_date,
    move_out_date: r.move_out_date,
    notice_date: r.notice_date,
    signed_date: r.signed_date,
    rent_amount: money(r.rent_amount, r.rent_currency),
    security_deposit: money(r.security_deposit_amount, r.security_deposit_currency),
    balance: money(r.balance_amount, r.balance_currency),
    term_months: r.term_months,
    renewal_status: r.renewal_status,
    is_renewal: r.is_renewal,
    previous_lease_id: r.previous_lease_id,
    concessions: r.concessions,
    notes: r.notes,
    custom_data: r.custom_data ?? {},
    created_at: iso(r.created_at),
    updated_at: iso(r.updated_at),
    deleted_at: iso(r.deleted_at),
    ps_synced_at: iso(r.ps_synced_at),
  };
}

async function withResidents(rows: Row[]) {
  const people = new Map<string, { resident_id: string; x_id: string; role: string }[]>();
  if (rows.length > 0) {
    const links = await sql`
      select lease_id, resident_id, x_id, role from lease_residents
      where lease_id in ${sql(rows.map((r) => r.id as string))} order by lease_id, position`;
    for (const l of links) {
      const list = people.get(l.lease_id) ?? [];
      list.push({ resident_id: l.resident_id, x_id: l.x_id, role: l.role });
      people.set(l.lease_id, list);
    }
  }
  return rows.map((r) => leaseJson(r, people.get(r.id) ?? []));
}

function send(res: ServerResponse, status: number, body: unknown) {
  const json = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(json) });
  res.end(json);
}

/** Answers one request; every failure becomes a 500, so the promise never rejects. */
const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
  try {
    const url = new URL(req.url ?? '/', 'http://baseline');
    if (url.pathname === '/healthz') return send(res, 200, { status: 'ok' });
    if (url.pathname === '/v1/leases') {
      const limit = Number(url.searchParams.get('limit') ?? 25);
      const status = url.searchParams.get('status');
      const updatedAfter = url.searchParams.get('updated_after');
      const rows = await sql`
        select * from leases
        where organization_id = ${organizationId} and mode = ${mode} and deleted_at is null
          ${updatedAfter ? sql`and updated_at >= ${new Date(updatedAfter)}` : sql``}
          ${status ? sql`and status = any(${status.split(',')}::text[])` : sql``}
        order by created_at asc, id asc limit ${limit + 1} offset ${0}`;
      const hasMore = rows.length > limit;
      return send(res, 200, { meta: { limit, offset: 0, hasMore }, results: await withResidents(hasMore ? rows.slice(0, limit) : [...rows]) });
    }
    const m = /^\/v1\/leases\/([^/]+)$/.exec(url.pathname);
    if (m) {
      const rows = await sql`
        select * from leases
        where id = ${m[1]!} and organization_id = ${organizationId} and mode = ${mode} and deleted_at is null limit 1`;
      if (rows.length === 0) return send(res, 404, { status: 404 });
      return send(res, 200, (await withResidents([...rows]))[0]);
    }
    send(res, 404, { status: 404 });
  } catch (err) {
    send(res, 500, { error: String(err) });
  }
};

const server = createServer((req, res) => void handle(req, res));

server.listen(Number(portArg), '127.0.0.1', () => console.log(`baseline listening on ${portArg}`));
process.on('SIGTERM', () => server.close(() => void sql.end({ timeout: 2 }).then(() => process.exit(0))));
