/**
 * bench:writes's client, a process of its own for the whole bench so that neither the API nor the orchestration
 * shares its event loop: `node --import tsx bench/lib/write-client.ts`. It writes as an API user does: PATCH
 * /v1/leases/{id} with a fresh Idempotency-Key, then GET /v1/operations/{id} until the Operation is `succeeded` or
 * `failed`, one poll in flight at a time. With `pollMs` 0 each poll asks to be held until the Operation ends
 * (`Prefer: wait=20`, api/operation-waits.ts), the first at the 202, the next at the reply of one that ran out;
 * otherwise the next poll goes `pollMs` after the previous one began (or at its reply, if that came later), the
 * first `pollMs` after the 202.
 *
 * A write's latency is what its caller sees: from just before the PATCH is sent until the reply of the poll that
 * shows it terminal has been read (performance.now() in this process). Polling adds up to `pollMs` plus one GET to
 * the moment the Operation turned terminal; a held poll, the notification's way from Postgres to the API.
 *
 * Commands arrive as JSON lines on stdin (WriteCommand): `lanes` of writes, each lane one caller writing its writes
 * one after another, all lanes at once; lane i talks to `urls[i % urls.length]`. Each command is answered by one
 * stdout line `write-result <id> <json>` (WriteRunResult) or `write-error <id> <message>`. Prints `write client
 * ready` at start.
 */
import { randomUUID } from 'node:crypto';
import { serveCommands } from './commands';

export interface LeaseWrite {
  leaseId: string;
  /** rent_amount.amount, in cents. */
  rent: number;
}

export interface WriteCommand {
  id: string;
  urls: string[];
  key: string;
  lanes: LeaseWrite[][];
  /** Between polls; 0: held polls (`Prefer: wait`). */
  pollMs: number;
  /** A write whose Operation is not terminal this long after its PATCH is an error. */
  timeoutMs: number;
}

export interface WriteOutcome extends LeaseWrite {
  lane: number;
  /** Idempotency-Key sent. */
  idempotencyKey: string;
  /** ms since the command began that the PATCH was sent. */
  startMs: number;
  /** Epoch ms the PATCH was sent and the terminal poll reply read (to line up with Temporal's event times). */
  sentAt: number;
  doneAt: number;
  /** PATCH sent → terminal poll reply read. */
  ms: number;
  /** PATCH sent → 202 read. */
  acceptMs: number;
  polls: number;
  operationId: string | null;
  /** The Operation's last status seen (null: none). */
  status: string | null;
  /** Set when this write is an error: a non-202 reply, a poll that was not 200, a failed Operation, a time-out. */
  error: string | null;
}

export interface WriteRunResult {
  /** First PATCH sent → last write done. */
  ms: number;
  outcomes: WriteOutcome[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));

/** One HTTP exchange; the reply's body read whole (text), its request id kept for error reports. */
async function call(url: string, init: RequestInit): Promise<{ status: number; text: string; requestId: string | null; applied: string | null }> {
  const res = await fetch(url, init);
  return { status: res.status, text: await res.text(), requestId: res.headers.get('x-request-id'), applied: res.headers.get('preference-applied') };
}

/** How long a held poll asks to be held, in seconds. */
const HELD_S = 20;

const describe = (what: string, r: { status: number; text: string; requestId: string | null }) =>
  `${what} → ${r.status} (x-request-id ${r.requestId ?? '-'}): ${r.text.slice(0, 600)}`;

async function writeOne(cmd: WriteCommand, base: string, lane: number, w: LeaseWrite, began: number): Promise<WriteOutcome> {
  const idempotencyKey = randomUUID();
  const auth = { authorization: `Bearer ${cmd.key}` };
  const body = JSON.stringify({ rent_amount: { amount: w.rent, currency: 'USD' } });
  const t0 = performance.now();
  const sentAt = Date.now();
  const out: WriteOutcome = {
    ...w,
    lane,
    idempotencyKey,
    startMs: t0 - began,
    sentAt,
    doneAt: 0,
    ms: 0,
    acceptMs: 0,
    polls: 0,
    operationId: null,
    status: null,
    error: null,
  };
  const done = (error: string | null) => {
    out.ms = performance.now() - t0;
    out.doneAt = sentAt + out.ms;
    out.error = error;
    return out;
  };
  const path = `/v1/leases/${w.leaseId}`;
  let accepted;
  try {
    accepted = await call(base + path, { method: 'PATCH', headers: { ...auth, 'content-type': 'application/json', 'idempotency-key': idempotencyKey }, body });
  } catch (err) {
    return done(`PATCH ${path}: ${String(err)}`);
  }
  out.acceptMs = performance.now() - t0;
  if (accepted.status !== 202) return done(describe(`PATCH ${path} ${body} (Idempotency-Key ${idempotencyKey})`, accepted));
  const op = JSON.parse(accepted.text) as { id: string; status: string };
  out.operationId = op.id;
  out.status = op.status;
  const held = cmd.pollMs === 0;
  const pollHeaders = held ? { ...auth, prefer: `wait=${HELD_S}` } : auth;
  let pollAt = performance.now() + cmd.pollMs;
  for (;;) {
    await sleep(pollAt - performance.now());
    const sent = performance.now();
    if (sent - t0 > cmd.timeoutMs) return done(`Operation ${op.id} still ${out.status} ${cmd.timeoutMs} ms after its PATCH`);
    let r;
    try {
      r = await call(`${base}/v1/operations/${op.id}`, { headers: pollHeaders });
    } catch (err) {
      return done(`GET /v1/operations/${op.id}: ${String(err)}`);
    }
    out.polls++;
    if (r.status !== 200) return done(describe(`GET /v1/operations/${op.id}`, r));
    if (held && r.applied !== `wait=${HELD_S}`) return done(describe(`GET /v1/operations/${op.id} (Prefer: wait=${HELD_S}) was not held`, r));
    const now = JSON.parse(r.text) as { status: string; reconcile?: { last_error?: string | null } };
    out.status = now.status;
    if (now.status === 'succeeded') return done(null);
    if (now.status === 'failed') return done(`Operation ${op.id} (PATCH ${path} ${body}) failed: ${r.text.slice(0, 600)}`);
    pollAt = Math.max(sent + cmd.pollMs, performance.now());
  }
}

async function run(cmd: WriteCommand): Promise<WriteRunResult> {
  const began = performance.now();
  const outcomes: WriteOutcome[] = [];
  await Promise.all(
    cmd.lanes.map(async (writes, lane) => {
      const base = cmd.urls[lane % cmd.urls.length]!;
      for (const w of writes) outcomes.push(await writeOne(cmd, base, lane, w, began));
    }),
  );
  return { ms: performance.now() - began, outcomes };
}

serveCommands('write', run);
console.log('write client ready');
