/**
 * The API's Temporal client: connects on first use and, after a failure, tries again on the next call, so the API
 * starts (and answers /readyz with 503) while Temporal is still down.
 */
import type { Client } from '@temporalio/client';
import type { Config } from '../config';
import { temporalConnectionOptions } from '../config/temporal';

export interface TemporalGetter {
  (): Promise<Client>;
  close(): Promise<void>;
}

/** The SDK is imported on first use: it weighs ~40 MB of RSS that an API process serving only reads never needs. */
export function lazyTemporalClient(config: Config, opts: { connectTimeoutMs?: number; tracing?: boolean } = {}): TemporalGetter {
  let pending: Promise<Client> | undefined;
  const get = (() => {
    pending ??= import('@temporalio/client')
      .then(async ({ Client, Connection }) => {
        const connection = await Connection.connect({ ...temporalConnectionOptions(config), connectTimeout: opts.connectTimeoutMs ?? 3_000 });
        // Traced: a workflow started under a request's span carries its context in its headers (one trace).
        const interceptors = opts.tracing
          ? { workflow: [new (await import('@temporalio/interceptors-opentelemetry')).OpenTelemetryWorkflowClientInterceptor()] }
          : undefined;
        return new Client({ connection, namespace: config.TEMPORAL_NAMESPACE, interceptors });
      })
      .catch((err: unknown) => {
        pending = undefined;
        throw err;
      });
    return pending;
  }) as TemporalGetter;
  get.close = async () => {
    const p = pending;
    pending = undefined;
    if (p) await p.then((c) => c.connection.close()).catch(() => {});
  };
  return get;
}
