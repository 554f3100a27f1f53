/**
 * What a CLI command is (a noun's verb: its arguments, its flags and the one admin API call it makes) and the flag
 * readers and verb shapes the nouns of cli/commands/ share.
 */
import { CliError, type AdminClient } from './client';

export interface Flag {
  type: 'string' | 'boolean';
  description: string;
  /** Shown in help: `--size <n>`. */
  value?: string;
  /** May be given more than once (`--filter a=1 --filter b=2`); its value is then the list of them. */
  multiple?: boolean;
}

/** A parsed flag: a string, a boolean switch, or the list of a `multiple` flag's values. */
export type FlagValue = string | boolean | string[] | undefined;

export interface Command {
  summary: string;
  /** Positional arguments, in order, all required. */
  args: string[];
  flags: Record<string, Flag>;
  run(ctx: { client: AdminClient; args: string[]; flags: Record<string, FlagValue> }): Promise<{ output: unknown; exitCode?: number }>;
}

export interface Noun {
  summary: string;
  verbs: Record<string, Command>;
}

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

/** Drops undefined members so the API sees only what the operator gave. */
export const defined = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

export const page: Record<string, Flag> = {
  limit: { type: 'string', value: '<n>', description: 'Page size, 1 to 100 (default 25)' },
  offset: { type: 'string', value: '<n>', description: 'Zero-based offset (default 0)' },
};
export const pageQuery = (flags: Record<string, FlagValue>) => {
  const q = new URLSearchParams(defined({ limit: int('limit', flags.limit), offset: int('offset', flags.offset) }) as Record<string, string>);
  return q.size ? `?${q}` : '';
};
export const id = (s: string) => encodeURIComponent(s);

/** A verb that PATCHes one field of a resource to a fixed value (enable, disable, pause, resume). */
export const patchVerb = (summary: string, arg: string, path: (id: string) => string, body: Record<string, unknown>): Command => ({
  summary,
  args: [arg],
  flags: {},
  run: async ({ client, args }) => ({ output: await client.request('PATCH', path(id(args[0]!)), body) }),
});

/** A verb that DELETEs one resource and says so. */
export const deleteVerb = (summary: string, arg: string, path: (id: string) => string): Command => ({
  summary,
  args: [arg],
  flags: {},
  run: async ({ client, args }) => {
    await client.request('DELETE', path(id(args[0]!)));
    return { output: { id: args[0], deleted: true } };
  },
});
