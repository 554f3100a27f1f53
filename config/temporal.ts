/**
 * How every process of the service reaches Temporal: the address, and TLS (mTLS client certificate, a custom CA, a
 * server name) or an API key for Temporal Cloud or a self-hosted cluster behind TLS. The same options suit the
 * client (@temporalio/client Connection) and the worker (NativeConnection). Certificate files are read here, once
 * per connection.
 */
import { readFileSync } from 'node:fs';
import type { Config } from './index';

export interface TemporalConnectionOptions {
  address: string;
  tls?: {
    serverNameOverride?: string;
    serverRootCACertificate?: Buffer;
    clientCertPair?: { crt: Buffer; key: Buffer };
  };
  apiKey?: string;
}

function temporalAddressOf(config: Config): string {
  return config.TEMPORAL_ADDRESS ?? `127.0.0.1:${config.TEMPORAL_PORT}`;
}

export function temporalConnectionOptions(config: Config): TemporalConnectionOptions {
  const address = temporalAddressOf(config);
  const tlsWanted =
    config.TEMPORAL_TLS ||
    config.TEMPORAL_API_KEY !== undefined ||
    config.TEMPORAL_TLS_CERT_PATH !== undefined ||
    config.TEMPORAL_TLS_CA_PATH !== undefined ||
    config.TEMPORAL_TLS_SERVER_NAME !== undefined;
  if (!tlsWanted) return { address };
  const tls: NonNullable<TemporalConnectionOptions['tls']> = {};
  if (config.TEMPORAL_TLS_SERVER_NAME) tls.serverNameOverride = config.TEMPORAL_TLS_SERVER_NAME;
  if (config.TEMPORAL_TLS_CA_PATH) tls.serverRootCACertificate = readFileSync(config.TEMPORAL_TLS_CA_PATH);
  if (config.TEMPORAL_TLS_CERT_PATH && config.TEMPORAL_TLS_KEY_PATH) {
    tls.clientCertPair = { crt: readFileSync(config.TEMPORAL_TLS_CERT_PATH), key: readFileSync(config.TEMPORAL_TLS_KEY_PATH) };
  }
  return { address, tls, ...(config.TEMPORAL_API_KEY ? { apiKey: config.TEMPORAL_API_KEY } : {}) };
}
