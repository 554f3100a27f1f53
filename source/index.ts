/**
 * The source connector: one client for the sandbox PMS and live Entrata-style systems alike (source/entrata.ts),
 * the interface it implements (source/connector.ts) and the mapping to the CDM (source/mapping.ts).
 */
import { SourcePermanentError, type SourceConnector, type SourceSettings } from './connector';
import { EntrataConnector, type ConnectorOptions } from './entrata';

export type { ConnectorOptions };
export * from './connector';

/** A connector over HTTP for an integration's source settings (base URL and API key). */
export function createConnector(settings: SourceSettings, opts?: ConnectorOptions): SourceConnector {
  if (settings.dialect === 'buildium') throw new SourcePermanentError('the buildium dialect is not built yet');
  return new EntrataConnector(settings, opts);
}
