/**
 * A verb's flags: how a verb declares them (an option that takes a value, a toggle, a repeatable option) and how it
 * reads what the operator gave, refusing a usage mistake (exit code 2).
 */
import { CliError } from './client';

export interface Flag {
  type: 'string' | 'boolean';
  description: string;
  /** Shown in help: `--size <n>`. */
  value?: string;
  /** May be given more than once (`--filter a=1 --filter b=2`); its value is then the list of them. */
  multiple?: boolean;
}

/** A flag that takes a value, shown in help as `--name <value>`. */
export const option = (value: string, description: string): Flag => ({ type: 'string', value, description });

/** An option that may be given more than once. */
export const repeatable = (value: string, description: string): Flag => ({ type: 'string', multiple: true, value, description });

/** A boolean switch: `--wait`. */
export const toggle = (description: string): Flag => ({ type: 'boolean', description });

/** A parsed flag: a string, a boolean switch, or the list of a `multiple` flag's values. */
export type FlagValue = string | boolean | string[] | undefined;

export const usageError = (message: string) => new CliError(message, 2);

export function int(name: string, value: FlagValue): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !/^-?\d+$/.test(value)) throw usageError(`--${name} must be an integer, got ${JSON.stringify(value)}`);
  return Number(value);
}

/** An integer, or `null`/`default` to clear an override. */
export function intOrNull(name: string, value: FlagValue): number | null | undefined {
  if (value === 'null' || value === 'default') return null;
  return int(name, value);
}

export function required(name: string, value: FlagValue): string {
  if (typeof value !== 'string' || value === '') throw usageError(`--${name} is required`);
  return value;
}

/** A comma-separated list, its items trimmed, empty ones dropped (`a, b,` is a and b). */
export const commaList = (value: string) =>
  value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

/** Where something is created (an integration, an API key): its organization and mode. */
export const orgAndMode: Record<string, Flag> = {
  org: option('<org_id>', 'Organization (required)'),
  mode: option('<test|live>', 'Mode (required)'),
};

/** `--poll-ms` of a verb that waits at a fixed interval. */
export const pollMsFlag: Flag = option('<ms>', 'Polling interval with --wait (default 1000)');

/**
 * `--timeout` and `--poll-ms` of a verb that follows what it started with `--wait`: both only with `--wait`, a time-out
 * of at least a second, a polling interval of at least 1 ms (default 1000).
 */
export function waitFlags(flags: Record<string, FlagValue>): { timeout: number | undefined; pollMs: number } {
  const timeout = waitTimeout(flags);
  if ((timeout !== undefined || flags['poll-ms'] !== undefined) && !flags.wait) throw usageError('--timeout and --poll-ms apply to --wait only');
  const pollMs = int('poll-ms', flags['poll-ms']) ?? 1000;
  if (pollMs < 1) throw usageError(`--poll-ms must be at least 1, got ${pollMs}`);
  return { timeout, pollMs };
}

/** `--timeout <seconds>` of a `--wait` that refuses less than a second. */
export function waitTimeout(flags: Record<string, FlagValue>): number | undefined {
  const timeout = int('timeout', flags.timeout);
  if (timeout !== undefined && timeout < 1) throw usageError(`--timeout must be at least 1 second, got ${timeout}`);
  return timeout;
}
