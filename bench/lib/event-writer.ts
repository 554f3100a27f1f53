/**
 * bench:webhooks's load: the process that records events in the outbox as a sync does (one insert per transaction,
 * test/support/webhooks.ts recordEvents), a process of its own so that neither the worker nor the bench's
 * orchestration shares its event loop: `node --import tsx bench/lib/event-writer.ts` with DATABASE_URL set.
 *
 * Commands arrive as JSON lines on stdin (EventCommand), one at a time:
 *   - `burst`: `count` events in transactions of `perTx`, committed back to back;
 *   - `steady`: `count` events at `rate` per second, `perTx` per transaction, each transaction started on its own
 *     tick (t0 + i × perTx / rate), whatever the previous one took.
 * Each command is answered by one stdout line `events-result <id> <json>` (EventRunResult: every transaction's
 * event ids, in order, and when its commit had returned, epoch ms) or `events-error <id> <message>`. Prints
 * `event writer ready` at start.
 */
import { readFileSync } from 'node:fs';
import { closeDb, createDb } from '../../db/client';
import type { IntegrationRow } from '../../db/tenants';
import { recordEvents, residentUpdates } from '../../test/support/webhooks';
import { serveCommands } from './commands';

export interface EventCommand {
  id: string;
  kind: 'burst' | 'steady';
  /** The integration the events belong to (what recordEvents reads of it). */
  integration: Pick<IntegrationRow, 'id' | 'organizationId' | 'mode'>;
  count: number;
  perTx: number;
  /** Events per second (`steady`). */
  rate?: number;
  /** Makes the events' content distinct between commands. */
  tag: string;
}

export interface EventTx {
  /** Epoch ms when the insert (its own transaction) had returned: the commit as the writer saw it. */
  at: number;
  ids: string[];
}

export interface EventRunResult {
  txs: EventTx[];
  /** First transaction started → last commit returned, ms. */
  ms: number;
  /** Ticks (`steady`) whose transaction started more than one interval late. */
  late: number;
  /** The writer's peak RSS so far (VmHWM), MB. */
  rssMb: number;
}

const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) {
  console.error('event-writer: DATABASE_URL is required');
  process.exit(2);
}
const db = createDb(databaseUrl, { max: 2, applicationName: 'propsync-bench-events' });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));

function vmHwmMb(): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
  return m ? Math.round(Number(m[1]) / 1024) : 0;
}

async function run(cmd: EventCommand): Promise<EventRunResult> {
  const integration = cmd.integration as IntegrationRow;
  const txs: EventTx[] = [];
  const batches = Math.ceil(cmd.count / cmd.perTx);
  const sizeOf = (i: number) => Math.min(cmd.perTx, cmd.count - i * cmd.perTx);
  // The drafts are made before the clock starts.
  const drafts = Array.from({ length: batches }, (_, i) => residentUpdates(sizeOf(i), `${cmd.tag}${i}-`));
  let late = 0;
  const began = performance.now();
  const every = cmd.kind === 'steady' ? (1000 * cmd.perTx) / cmd.rate! : 0;
  for (let i = 0; i < batches; i++) {
    if (cmd.kind === 'steady') {
      const wait = began + i * every - performance.now();
      if (wait < -every) late++;
      await sleep(wait);
    }
    const ids = await recordEvents(db, integration, drafts[i]!);
    txs.push({ at: Date.now(), ids });
  }
  return { txs, ms: performance.now() - began, late, rssMb: vmHwmMb() };
}

serveCommands('events', run, () => closeDb(db));
console.log('event writer ready');
