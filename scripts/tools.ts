/** Paths of the binaries that scripts/ensure.mjs installs into the project. */
import { fileURLToPath } from 'node:url';

export const TEMPORAL_CLI = fileURLToPath(new URL('../.tools/venv/bin/temporal', import.meta.url));
export const TEMPORAL_TEST_SERVER = fileURLToPath(new URL('../.tools/venv/bin/temporal-test-server', import.meta.url));
export const SCHEMATHESIS = fileURLToPath(new URL('../.tools/fuzz/bin/st', import.meta.url));
export const PROMTOOL = fileURLToPath(new URL('../.tools/prometheus/usr/bin/promtool', import.meta.url));
