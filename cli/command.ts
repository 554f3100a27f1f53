/**
 * What a CLI command is (a noun's verb: its arguments, its flags and the one admin API call it makes) and the verb
 * shapes the nouns of cli/commands/ share. Flags are declared and read with flags.ts.
 */
import type { AdminClient, FieldFlags } from './client';
import { int, option, usageError, type Flag, type FlagValue } from './flags';

export interface Command {
  summary: string;
  /** Positional arguments, in order, all required. */
  args: string[];
  flags: Record<string, Flag>;
  /** The flag each API field it sends comes from, where their names differ: its errors name the flag (client.ts). */
  fields?: FieldFlags;
  run(ctx: { client: AdminClient; args: string[]; flags: Record<string, FlagValue> }): Promise<{ output: unknown; exitCode?: number }>;
}

export interface Noun {
  summary: string;
  verbs: Record<string, Command>;
  /** The verb run when none is given (`health` is `health get`); without one, a missing verb is a usage mistake. */
  default?: string;
}

/** Drops undefined members so the API sees only what the operator gave. */
export const defined = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

export const id = (s: string) => encodeURIComponent(s);

/** `/organizations/{org_id}/api_keys`: its placeholders name the verb's arguments, in order, and take their values URL-encoded. */
function route(template: string): { args: string[]; path: (values: string[]) => string } {
  const args = [...template.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
  return {
    args,
    path: (values) => {
      let i = 0;
      return template.replace(/\{\w+\}/g, () => id(values[i++]!));
    },
  };
}

/** A verb that makes one fixed call, `METHOD /path/{arg}` (show, replay, enable, pause…), and prints the answer. */
export function callVerb(summary: string, call: string, body?: Record<string, unknown>): Command {
  const [method, template] = call.split(' ') as [string, string];
  const { args, path } = route(template);
  return { summary, args, flags: {}, run: async ({ client, args: values }) => ({ output: await client.request(method, path(values), body) }) };
}

/** A verb that DELETEs one resource and says so. */
export function deleteVerb(summary: string, template: string): Command {
  const { args, path } = route(template);
  return {
    summary,
    args,
    flags: {},
    run: async ({ client, args: values }) => {
      await client.request('DELETE', path(values));
      return { output: { id: values[0], deleted: true } };
    },
  };
}

const page: Record<string, Flag> = {
  limit: option('<n>', 'Page size, 1 to 100 (default 25)'),
  offset: option('<n>', 'Zero-based offset (default 0)'),
};

/**
 * A verb that GETs one page of a list: `--limit` and `--offset`, after the `filters`, flags that go to the API as the
 * query parameters of the same name (`--event-type` as `event_type`).
 */
export function listVerb(summary: string, template: string, filters: Record<string, Flag> = {}): Command {
  const { args, path } = route(template);
  return {
    summary,
    args,
    flags: { ...filters, ...page },
    fields: Object.fromEntries(
      Object.keys(filters)
        .filter((name) => name.includes('-'))
        .map((name) => [name.replaceAll('-', '_'), `--${name}`]),
    ),
    run: async ({ client, args: values, flags }) => {
      const given = Object.fromEntries(Object.keys(filters).map((name) => [name.replaceAll('-', '_'), flags[name]]));
      const q = new URLSearchParams(defined({ ...given, limit: int('limit', flags.limit), offset: int('offset', flags.offset) }) as Record<string, string>);
      return { output: await client.request('GET', `${path(values)}${q.size ? `?${q}` : ''}`) };
    },
  };
}

/**
 * A verb that sends a body made from its flags, `METHOD /path/{arg}`, and prints the answer. `nothing`: the usage
 * mistake of giving no flag that goes into the body (an update that changes nothing).
 */
export function sendVerb(
  call: string,
  verb: {
    summary: string;
    flags: Record<string, Flag>;
    body: (flags: Record<string, FlagValue>) => Record<string, unknown>;
    nothing?: string;
    fields?: FieldFlags;
  },
): Command {
  const [method, template] = call.split(' ') as [string, string];
  const { args, path } = route(template);
  return {
    summary: verb.summary,
    args,
    flags: verb.flags,
    fields: verb.fields,
    run: async ({ client, args: values, flags }) => {
      const body = verb.body(flags);
      if (verb.nothing !== undefined && Object.keys(body).length === 0) throw usageError(verb.nothing);
      return { output: await client.request(method, path(values), body) };
    },
  };
}
