/**
 * Setup file of the services and workflows projects: the Temporal SDK's runtime of each test process logs errors only.
 * Its default logs every worker state change at INFO and every workflow or activity failure at WARN, over a thousand
 * lines a green run, most of them failures the tests provoke on purpose; a failing test still prints its own error.
 * `TEST_LOG_LEVEL=INFO npm test` (or WARN, DEBUG) shows them again. Workers started as child processes log as they
 * are configured.
 */
import { DefaultLogger, Runtime, type LogLevel } from '@temporalio/worker';

const LEVELS: readonly LogLevel[] = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR'];
const asked = process.env.TEST_LOG_LEVEL?.toUpperCase();
const level: LogLevel = LEVELS.find((l) => l === asked) ?? 'ERROR';

Runtime.install({ logger: new DefaultLogger(level), telemetryOptions: { logging: { filter: { core: level, other: level } } } });
