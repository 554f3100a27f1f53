/** What the API needs from the outside world, handed in by api/main.ts (and by tests). */
import type { Client } from '@temporalio/client';
import type { Config } from '../config';
import type { Logger } from '../config/logger';
import type { Db } from '../db/client';
import type { Keyring } from '../domain/secrets';
import type { HealthFactsSource } from '../observability/metrics';

export interface ApiDeps {
  config: Config;
  db: Db;
  /** Temporal client; a getter so the API can start (and report not-ready) while Temporal is unreachable. */
  temporal: () => Promise<Client>;
  logger: Logger;
  /** Seals the secrets the admin API stores (source api keys, signing secrets); opens only a source's api key, to read its write options. */
  secrets: Keyring;
  /** The database health facts (db/health.ts) behind a short cache; createApp sets it for the admin API and console. */
  health?: HealthFactsSource;
}
