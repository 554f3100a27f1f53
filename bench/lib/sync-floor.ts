/**
 * The floors of bench:sync, run as a process of their own for the whole bench, as the worker is:
 * `node --import tsx bench/lib/sync-floor.ts` with DATABASE_URL (the bench's cache database), SYNC_PAGE_SIZE,
 * WORKER_READ_THREADS and DB_POOL_MAX as the worker gets them.
 *
 * It reads every page of the source the way a sync does and nothing more: through the worker's own page reader
 * (activities/page-reader.ts, the same threads), one page in flight per entity with the next one read while the
 * current one is handled, the entities in the workflow's stages (property; unit and resident side by side; lease).
 *   - `initial`: each page's records mapped to the same rows the sync writes (db/row-values.ts rowValuesOf, the reader's
 *     content hash, the same lease_residents) and written with COPY ... FROM STDIN (CSV), one COPY per table and
 *     page, each committed on its own as a sync commits each page (what its resume point needs). References are
 *     resolved from memory, with no lookup of what is cached: the cache starts empty.
 *   - `incremental`: the read-only pass (read, map, hash every page; nothing written).
 *
 * Commands arrive as JSON lines on stdin: {id, kind, settings: {base_url, api_key}, integration: {id,
 * organizationId, mode}}; each is answered by one stdout line `floor-result <id> <json>` (FloorResult) or
 * `floor-error <id> <message>`. Prints `floor ready` once its page reader and pool exist.
 */
import postgres from 'postgres';
import { createPageReader, type HashedPage } from '../../activities/page-reader';
import { loadConfigOrExit } from '../../config';
import { newId } from '../../db/ids';
import type { Refs } from '../../db/row-values';
import type { Entity, InputOf } from '../../domain/cdm';
import type { Mode } from '../../domain/plans';
import type { SourceSettings } from '../../source';
import { SYNC_STAGES } from '../../domain/cdm';
import { serveCommands } from './commands';
import { cacheRowsOf, copyCsv, SHAPES, toCsv, type MappedRecord } from './copy';

export interface FloorCommand {
  id: string;
  kind: 'initial' | 'incremental';
  settings: SourceSettings;
  integration: { id: string; organizationId: string; mode: Mode };
}

export interface FloorResult {
  ms: number;
  /** Records the source served, per entity (mapped ones plus any the mapping could not read). */
  served: Record<Entity, number>;
  /** Records the mapping could not read (a page reader that reports them). */
  skipped: number;
  /** Rows written (initial only), per table. */
  written: Record<string, number>;
  pages: number;
  /** Where the time went, summed over the entities of a stage (which overlap): waiting for pages, mapping, COPY. */
  waitMs: number;
  mapMs: number;
  copyMs: number;
}

const config = loadConfigOrExit();
const PAGE = config.SYNC_PAGE_SIZE;
const pages = createPageReader({ threads: config.WORKER_READ_THREADS });
const sql = postgres(config.DATABASE_URL, { max: config.DB_POOL_MAX, onnotice: () => {}, connection: { application_name: 'propsync-bench-floor' } });

async function run(cmd: FloorCommand): Promise<FloorResult> {
  const served: Record<Entity, number> = { property: 0, unit: 0, resident: 0, lease: 0 };
  const written: Record<string, number> = {};
  let skipped = 0;
  let pageCount = 0;
  let waitMs = 0;
  let mapMs = 0;
  let copyMs = 0;
  const refs: Refs = { property: new Map(), unit: new Map(), resident: new Map(), lease: new Map() };
  const now = new Date();

  /** The rows a sync writes for a page of a first sync, written with COPY. */
  async function write<E extends Entity>(entity: E, page: HashedPage<E>): Promise<void> {
    const m0 = performance.now();
    // The last occurrence of an x_id in a page wins, as in applyHashedRecords.
    const byXId = new Map<string, MappedRecord<E>>();
    for (const r of page.records) byXId.set(r.x_id, { input: JSON.parse(r.json) as InputOf[E], hash: r.hash, id: newId(entity) });
    const { rows, people } = cacheRowsOf(entity, byXId.values(), refs, cmd.integration, now);
    const csv = toCsv(SHAPES[entity], rows);
    const peopleCsv = entity === 'lease' ? toCsv(SHAPES.lease_residents, people) : '';
    const c0 = performance.now();
    mapMs += c0 - m0;
    await copyCsv(sql, SHAPES[entity], csv);
    written[entity] = (written[entity] ?? 0) + rows.length;
    if (entity === 'lease') {
      await copyCsv(sql, SHAPES.lease_residents, peopleCsv);
      written.lease_residents = (written.lease_residents ?? 0) + people.length;
    }
    copyMs += performance.now() - c0;
  }

  /** Every page of one entity, one read in flight, the next read while the current page is handled. */
  async function entityPass<E extends Entity>(entity: E): Promise<void> {
    const read = (n: number) => pages.read(cmd.settings, entity, n, PAGE);
    let next = read(1);
    for (;;) {
      const w0 = performance.now();
      const page = await next;
      waitMs += performance.now() - w0;
      if (page.hasMore) next = read(page.page + 1);
      pageCount++;
      const unreadable = (page as { skipped?: unknown[] }).skipped?.length ?? 0;
      served[entity] += page.records.length + unreadable;
      skipped += unreadable;
      if (cmd.kind === 'initial') await write(entity, page);
      if (!page.hasMore) return;
    }
  }

  const t0 = performance.now();
  for (const stage of SYNC_STAGES) await Promise.all(stage.map((entity) => entityPass(entity)));
  return { ms: performance.now() - t0, served, skipped, written, pages: pageCount, waitMs, mapMs, copyMs };
}

serveCommands('floor', run, shutdown);
async function shutdown() {
  await pages.close();
  await sql.end({ timeout: 5 });
  process.exit(0);
}
process.once('SIGTERM', () => void shutdown());
console.log(`floor ready (page size ${PAGE}, ${config.WORKER_READ_THREADS} page-reading thread(s), pool of ${config.DB_POOL_MAX})`);
