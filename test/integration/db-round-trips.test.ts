/**
 * What the service's queries cost on the wire (patches/postgres+3.4.9.patch): a drizzle query, which postgres.js
 * runs unprepared, with plain scalar arguments goes out as one batch (Parse, Describe, Bind, Execute, Sync): one round
 * trip. Unpatched, postgres.js first sent Parse and Describe with a Flush and waited for the parameter types before
 * it sent the rest: two round trips for every such query, and nothing pipelined behind it on its connection.
 * Arguments that need the server's types to be written (an array) are still described first, and read back right.
 * Counted by a TCP relay between the client and the test's Postgres that frames what the client sends.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { sql } from 'drizzle-orm';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { closeDb, createDb, type Db } from '../../db/client';

/** Frontend messages by type byte ('P' Parse, 'D' Describe, 'B' Bind, 'E' Execute, 'S' Sync, 'H' Flush, 'Q' Query). */
const sent = new Map<string, number>();
let relay: Server;
const sockets = new Set<Socket>();
let db: Db;
let url = '';

/** Counts the frontend messages of one connection's client → server bytes, after its start-up packet(s). */
function counter(): (chunk: Buffer) => void {
  let pending = Buffer.alloc(0);
  let started = false;
  return (chunk) => {
    pending = Buffer.concat([pending, chunk]);
    for (;;) {
      if (!started) {
        if (pending.length < 8) return;
        const length = pending.readUInt32BE(0);
        if (pending.length < length) return;
        // An SSLRequest (80877103) is followed by the real start-up packet; anything else is the start-up itself.
        if (pending.readUInt32BE(4) !== 80877103) started = true;
        pending = pending.subarray(length);
        continue;
      }
      if (pending.length < 5) return;
      const length = pending.readUInt32BE(1);
      if (pending.length < length + 1) return;
      const type = String.fromCharCode(pending[0]!);
      sent.set(type, (sent.get(type) ?? 0) + 1);
      pending = pending.subarray(length + 1);
    }
  };
}

beforeAll(async () => {
  const target = new URL(inject('adminDatabaseUrl'));
  const [host, port] = [target.hostname, Number(target.port || 5432)];
  relay = createServer((client) => {
    const server = connect(port, host);
    for (const s of [client, server]) {
      sockets.add(s);
      s.on('error', () => {});
      s.on('close', () => sockets.delete(s));
    }
    const count = counter();
    client.on('data', (chunk: Buffer) => {
      count(chunk);
      server.write(chunk);
    });
    server.pipe(client);
    client.on('close', () => server.destroy());
    server.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
  target.hostname = '127.0.0.1';
  target.port = String((relay.address() as AddressInfo).port);
  url = target.toString();
  db = createDb(url, { max: 1 });
  await db.execute(sql`select 1`); // connected, its start-up done
});

afterAll(async () => {
  await closeDb(db);
  for (const s of sockets) s.destroy();
  await new Promise<void>((resolve) => relay.close(() => resolve()));
});

/** The messages the client sent while `fn` ran. */
async function messagesOf(fn: () => Promise<unknown>): Promise<Record<string, number>> {
  sent.clear();
  await fn();
  return Object.fromEntries([...sent].sort());
}

describe('a drizzle query on the wire', () => {
  it('with scalar arguments is one batch, no Flush to wait on: one round trip, and the values typed by the server', async () => {
    let rows: unknown[] = [];
    const messages = await messagesOf(async () => {
      rows = await db.execute(
        sql`select ${'a b'}::text as t, ${2}::int + 1 as n, ${'12.50'}::numeric as m, ${true} as yes, ${null}::int as nothing, ${'{"k":[1]}'}::jsonb as j, ${'2026-11-27T10:00:00.000Z'}::timestamptz as at`,
      );
    });
    expect(messages).toEqual({ B: 1, D: 1, E: 1, P: 1, S: 1 });
    expect(rows).toEqual([{ t: 'a b', n: 3, m: '12.50', yes: true, nothing: null, j: { k: [1] }, at: '2026-11-27 10:00:00+00' }]);
  });

  it('pipelines queries sent together on one connection: three queries, no Flush between them', async () => {
    const messages = await messagesOf(() => Promise.all([1, 2, 3].map((n) => db.execute(sql`select ${n}::int as n`))));
    expect(messages).toEqual({ B: 3, D: 3, E: 3, P: 3, S: 3 });
  });

  it('with an argument whose encoding needs the server’s type (an array) still asks for the types first', async () => {
    const raw = postgres(url, { max: 1, onnotice: () => {} });
    try {
      let rows: unknown[] = [];
      const messages = await messagesOf(async () => {
        rows = await raw.unsafe('select $1::int[] as xs, $2::text as t', [[1, 2, 3], 'x']);
      });
      expect(messages.H).toBe(1);
      expect(rows).toEqual([{ xs: [1, 2, 3], t: 'x' }]);
    } finally {
      await raw.end();
    }
  });
});
