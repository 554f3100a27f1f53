/**
 * One page of a sync, read on a page-reading thread (activities/page-reader.ts): fetched from the source, mapped
 * to the CDM by the connector and every record hashed, so that the activity's event loop is left with comparing
 * hashes and writing what changed. Records cross back to the activity as JSON text, parsed only where they changed.
 *
 * Free of database and Temporal imports: it is what each thread loads.
 */
import type { Entity } from '../domain/cdm';
import { hashRecord } from '../domain/content';
import { createConnector, SourcePermanentError, SourceTransientError, type ConnectorOptions, type SkippedRecord, type SourceSettings } from '../source';

export interface PageTask {
  settings: SourceSettings;
  entity: Entity;
  page: number;
  size: number;
  /** Look these x_ids up instead of reading a page (the records of the reply, whatever page they are on). */
  ids?: string[];
  /**
   * Read the page of the records changed in this window (ISO times: a Date does not keep its type between threads)
   * instead of a page of all of them.
   */
  window?: { from: string; to: string };
  /** The connector's retry policy (what can cross to a thread: no functions). */
  connector?: TaskConnectorOptions;
}

export type TaskConnectorOptions = Pick<ConnectorOptions, 'timeoutMs' | 'maxAttempts' | 'backoffMs' | 'maxRetryAfterMs'>;

/** A page as parallel arrays (cheap to copy between threads), or the source failure that stopped it. */
export type PageReply =
  | { ok: true; page: number; hasMore: boolean; total?: number; xIds: string[]; hashes: string[]; jsons: string[]; skipped: SkippedRecord[] }
  | { ok: false; permanent: boolean; message: string; retryAfterMs?: number };

export default async function readHashedPage(task: PageTask): Promise<PageReply> {
  try {
    const connector = createConnector(task.settings, task.connector);
    const { records, skipped, page, hasMore, total } = task.ids
      ? { ...(await connector.readByIds(task.entity, task.ids)), page: task.page, hasMore: false }
      : task.window
        ? await connector.readChangedPage(task.entity, { from: new Date(task.window.from), to: new Date(task.window.to) }, task.page, task.size)
        : await connector.readPage(task.entity, task.page, task.size);
    const xIds: string[] = [];
    const hashes: string[] = [];
    const jsons: string[] = [];
    for (const record of records) {
      const h = hashRecord(record, false);
      xIds.push(h.x_id);
      hashes.push(h.hash);
      jsons.push(h.json);
    }
    return { ok: true, page, hasMore, ...(total === undefined ? {} : { total }), xIds, hashes, jsons, skipped };
  } catch (err) {
    // Error classes do not survive the trip between threads; the distinction the activity acts on does.
    if (err instanceof SourcePermanentError) return { ok: false, permanent: true, message: err.message };
    if (err instanceof SourceTransientError) return { ok: false, permanent: false, message: err.message, retryAfterMs: err.retryAfterMs };
    throw err;
  }
}
