/**
 * The one interface to a property management system. The Entrata-style HTTP client implements it for the sandbox
 * PMS and for live systems alike. Reads are paged; mapping to the CDM happens inside the connector so callers only
 * ever see CDM input (references by x_id, unmapped source fields in custom_data).
 */
import type { Entity, InputOf } from '../domain/cdm';

export interface SourcePage<E extends Entity> {
  records: InputOf[E][];
  /** 1-based page number of this page. */
  page: number;
  /** Whether another page follows. */
  hasMore: boolean;
}

/** A failure the source will not get over by retrying (bad credentials, a rejected write, a malformed reply). */
export class SourcePermanentError extends Error {
  override name = 'SourcePermanentError';
  constructor(
    message: string,
    readonly status?: number,
    readonly code?: string,
  ) {
    super(message);
  }
}

/** A failure worth retrying (network error, timeout, 5xx, 429). `retryAfterMs` when the source said so. */
export class SourceTransientError extends Error {
  override name = 'SourceTransientError';
  constructor(
    message: string,
    readonly status?: number,
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

export interface SourceConnector {
  /** Read one page (1-based) of an entity. */
  readPage<E extends Entity>(entity: E, page: number, perPage: number): Promise<SourcePage<E>>;
}

export interface SourceSettings {
  base_url: string;
  api_key: string;
}
