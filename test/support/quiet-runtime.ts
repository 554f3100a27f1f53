/**
 * Setup file of the services project: the Temporal SDK's runtime of each test process logs warnings and errors only.
 * Its default logs every worker state change at INFO on the console, over a thousand lines a green run; a failing
 * test still prints its own error, and workers started as child processes log as they are configured.
 */
import { DefaultLogger, Runtime } from '@temporalio/worker';

Runtime.install({ logger: new DefaultLogger('WARN'), telemetryOptions: { logging: { filter: { core: 'WARN', other: 'WARN' } } } });
