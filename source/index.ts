/**
 * The source connector: one client for the sandbox PMS and live Entrata-style systems alike (source/entrata.ts),
 * the interface it implements (source/connector.ts) and the mapping to the CDM (source/mapping.ts).
 */
import type { SourceConnector, SourceSettings } from './connector';
import { EntrataConnector, type ConnectorOptions } from './entrata';

export type { ConnectorOptions };
export * from './connector';

/** A connector over HTTP for an integration's source settings (base URL and API key). */
export function createConnector(settings: SourceSettings, opts?: ConnectorOptions): SourceConnector {
  return new EntrataConnector(settings, opts);
}
