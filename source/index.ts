/**
 * The source connector: the interface every dialect implements (source/connector.ts), one folder per dialect with
 * its client and its mapping to the CDM (source/entrata/, source/buildium/), and what they share and no dialect owns
 * (source/http.ts: requests, retries and the classification of failures; source/values.ts: money, dates, custom_data).
 */
import type { SourceConnector, SourceSettings } from './connector';
import { BuildiumConnector } from './buildium/client';
import { EntrataConnector } from './entrata/client';
import type { ConnectorOptions } from './http';

export type { ConnectorOptions };
export * from './connector';

/**
 * A connector over HTTP for an integration's source settings, in the dialect they name (dialectOf: settings without
 * one are Entrata-style). A switch over the settings' own union, so a dialect added to SourceSettings and not here
 * does not compile.
 */
export function createConnector(settings: SourceSettings, opts?: ConnectorOptions): SourceConnector {
  switch (settings.dialect) {
    case 'buildium':
      return new BuildiumConnector(settings, opts);
    case 'entrata':
    case undefined:
      return new EntrataConnector(settings, opts);
  }
}
