/**
 * The operator CLI: `npm run -s cli -- <noun> <verb> [arguments] [--flags]`, a thin client of the admin API.
 * JSON on stdout; on failure one readable line on stderr (and one per field when the API refused several) and exit
 * code 1 (2 for a usage mistake).
 */
import { parseArgs } from 'node:util';
import { adminClientConfig, ConfigError } from '../config';
import { AdminClient, CliError, REQUEST_TIMEOUT_S } from './client';
import type { Command } from './command';
import { int, option, toggle, usageError, type Flag, type FlagValue } from './flags';
import { NOUNS } from './commands';

const GLOBAL: Record<string, Flag & { short?: string }> = {
  url: option('<url>', 'Address of the API (default: PUBLIC_BASE_URL, else http://HOST:PORT)'),
  token: option('<token>', 'Admin token (default: ADMIN_TOKEN)'),
  'request-timeout': option('<seconds>', `Give up on a request not answered in full within this long (default ${REQUEST_TIMEOUT_S}; exit 1)`),
  help: { ...toggle('Show help'), short: 'h' },
};

const PROG = 'npm run -s cli --';

function flagLines(flags: Record<string, Flag & { short?: string }>): string[] {
  const rows = Object.entries(flags).map(([name, f]) => [`${f.short ? `-${f.short}, ` : ''}--${name}${f.value ? ` ${f.value}` : ''}`, f.description] as const);
  const width = Math.max(...rows.map(([l]) => l.length));
  return rows.map(([l, d]) => `  ${l.padEnd(width)}  ${d}`);
}

function topHelp(): string {
  const nouns = Object.entries(NOUNS).map(([n, d]) => `  ${n.padEnd(12)} ${d.summary}: ${Object.keys(d.verbs).join(', ')}`);
  return [
    `Usage: ${PROG} <noun> <verb> [arguments] [--flags]`,
    '',
    'Operator CLI of propsync, a client of the admin API (/admin/v1). Prints JSON on stdout; an error is one line',
    'on stderr (and a line per field when several are refused) with exit code 1 (2 for a usage mistake).',
    '',
    'Nouns:',
    ...nouns,
    '',
    'Global flags:',
    ...flagLines(GLOBAL),
    '',
    `Run \`${PROG} <noun> --help\` or \`${PROG} <noun> <verb> --help\` for more.`,
  ].join('\n');
}

function nounHelp(name: string): string {
  const noun = NOUNS[name]!;
  const verbs = Object.entries(noun.verbs).map(([v, c]) => `  ${[v, ...c.args.map((a) => `<${a}>`)].join(' ').padEnd(34)} ${c.summary}`);
  return [
    `Usage: ${PROG} ${name} ${noun.default ? `[<verb>] (no verb: ${noun.default})` : '<verb>'} [arguments] [--flags]`,
    '',
    `${noun.summary}.`,
    '',
    'Verbs:',
    ...verbs,
    '',
    'Global flags:',
    ...flagLines(GLOBAL),
  ].join('\n');
}

function verbHelp(noun: string, verb: string, cmd: Command): string {
  const args = cmd.args.map((a) => `<${a}>`).join(' ');
  return [
    `Usage: ${PROG} ${noun} ${verb}${args ? ` ${args}` : ''}${Object.keys(cmd.flags).length ? ' [--flags]' : ''}`,
    '',
    `${cmd.summary}.`,
    ...(Object.keys(cmd.flags).length ? ['', 'Flags:', ...flagLines(cmd.flags)] : []),
    '',
    'Global flags:',
    ...flagLines(GLOBAL),
  ].join('\n');
}

const MAX_REQUEST_TIMEOUT_S = Math.floor((2 ** 31 - 1) / 1000);

const wantsHelp = (argv: string[]) => argv.includes('--help') || argv.includes('-h');

/** An argument as typed in a shell: quoted when it holds anything a shell would read otherwise. */
const shellWord = (s: string) => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replaceAll("'", `'\\''`)}'`);

/**
 * Node's refusal of the flags given, on one line. Its advice on dashes is kept, for the operator, where it applies:
 * a flag's value that starts with "-" (`--name -Acme`) is given as `--name=-Acme`. Where it does not (a positional
 * argument that starts with "-": no argument of the CLI does), it is dropped.
 */
function parseError(err: Error & { code?: string }, given: string[]): string {
  const message = err.message.replace(/\s*\n\s*/g, ' ');
  const flag = err.code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' && /argument is ambiguous/.test(message) ? /'--([^' ]+)'/.exec(message)?.[1] : undefined;
  if (flag === undefined) return message.split(/\.? To specify/)[0]!;
  const at = given.findIndex((arg, i) => arg === `--${flag}` && given[i + 1]?.startsWith('-'));
  // A secret is not repeated on the terminal (or a CI log): the token is shown as a placeholder.
  const value = at >= 0 && flag !== 'token' ? given[at + 1]! : flag === 'token' ? '<token>' : '-XYZ';
  return `Option '--${flag}' argument is ambiguous (did you forget its value?); to give a value that starts with "-", write ${shellWord(`--${flag}=${value}`)}`;
}

async function main(argv: string[]): Promise<number> {
  const [noun] = argv;
  let verb = argv[1];
  /** What follows the noun and verb: the arguments and flags. */
  let given = argv.slice(2);
  // Help goes to stdout only when asked for; a missing noun or verb is a usage mistake like any other.
  if (!noun || noun.startsWith('-')) {
    if (wantsHelp(argv)) {
      console.log(topHelp());
      return 0;
    }
    throw usageError(`expected a noun first (${Object.keys(NOUNS).join(', ')}); see --help`);
  }
  const n = NOUNS[noun];
  if (!n) throw usageError(`unknown noun "${noun}" (${Object.keys(NOUNS).join(', ')}); see --help`);
  if (!verb || verb.startsWith('-')) {
    if (wantsHelp(argv)) {
      console.log(nounHelp(noun));
      return 0;
    }
    if (n.default === undefined) throw usageError(`${noun} expects a verb: ${Object.keys(n.verbs).join(', ')}; see ${noun} --help`);
    // A noun with a verb of its own when none is given: `health` is `health get`.
    verb = n.default;
    given = argv.slice(1);
  }
  const cmd = n.verbs[verb];
  if (!cmd) throw usageError(`unknown verb "${verb}" for ${noun} (${Object.keys(n.verbs).join(', ')}); see ${noun} --help`);
  if (wantsHelp(argv)) {
    console.log(verbHelp(noun, verb, cmd));
    return 0;
  }

  let parsed;
  try {
    parsed = parseArgs({
      args: given,
      options: Object.fromEntries(
        Object.entries({ ...GLOBAL, ...cmd.flags }).map(([k, f]) => [
          k,
          { type: f.type, ...('short' in f && f.short ? { short: f.short } : {}), ...(f.multiple ? { multiple: true } : {}) },
        ]),
      ),
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    throw usageError(`${parseError(err as Error & { code?: string }, given)}; see ${noun} ${verb} --help`);
  }
  const args = parsed.positionals;
  if (args.length !== cmd.args.length) {
    const want = cmd.args.length ? cmd.args.map((a) => `<${a}>`).join(' ') : 'no arguments';
    throw usageError(`${noun} ${verb} takes ${want}, got ${args.length ? args.join(' ') : 'none'}; see ${noun} ${verb} --help`);
  }
  const flags = parsed.values as Record<string, FlagValue>;
  const requestTimeout = int('request-timeout', flags['request-timeout']) ?? REQUEST_TIMEOUT_S;
  // A timer's longest delay is 2^31 - 1 ms (about 24.8 days): Node fires a longer one at once.
  if (requestTimeout < 1 || requestTimeout > MAX_REQUEST_TIMEOUT_S) {
    throw usageError(`--request-timeout must be from 1 to ${MAX_REQUEST_TIMEOUT_S} seconds, got ${requestTimeout}`);
  }
  let target: { PUBLIC_BASE_URL: string; ADMIN_TOKEN: string };
  try {
    // Only what the CLI needs of the service's configuration: the API's address and token, unless given as flags.
    target = adminClientConfig(process.env, { url: flags.url as string | undefined, token: flags.token as string | undefined });
  } catch (err) {
    if (err instanceof ConfigError) throw usageError(err.message);
    throw err;
  }
  const client = new AdminClient(target.PUBLIC_BASE_URL, target.ADMIN_TOKEN, cmd.fields, requestTimeout * 1000);
  const { output, exitCode } = await cmd.run({ client, args, flags });
  process.stdout.write(`${JSON.stringify(output, null, 2)}\n`);
  return exitCode ?? 0;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    if (err instanceof CliError) {
      process.stderr.write(`error: ${err.message}\n`);
      process.exitCode = err.exitCode;
      return;
    }
    process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
