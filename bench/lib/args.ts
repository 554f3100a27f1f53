/**
 * A bench's command-line options, given by their defaults: a key `steadyRate` is the option `--steady-rate`, and the
 * default's type is the option's (a number, a flag, or text). A number option whose value is not a number stops the
 * bench before it starts, where node:util's parseArgs alone would hand on NaN.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';

type Defaults = Record<string, number | boolean | string>;

/**
 * Each bench passes its sizes and counts first (numbers) and anything that changes what runs second (flags, text),
 * and reads them back typed: `args.rounds` is a number, `args.fromSource` a boolean.
 */
export function benchArgs<N extends Record<string, number>, S extends Defaults = Record<never, never>>(numbers: N, switches?: S): N & S {
  const defaults: Defaults = { ...numbers, ...switches };
  const options: NonNullable<ParseArgsConfig['options']> = {};
  for (const [key, value] of Object.entries(defaults)) {
    options[optionOf(key)] = typeof value === 'boolean' ? { type: 'boolean', default: value } : { type: 'string', default: String(value) };
  }
  const { values } = parseArgs({ options });
  const args: Defaults = {};
  for (const [key, value] of Object.entries(defaults)) {
    const given = values[optionOf(key)] as string | boolean;
    if (typeof value !== 'number') args[key] = given;
    else if (given === '' || !Number.isFinite(Number(given))) throw new Error(`--${optionOf(key)} takes a number, not ${JSON.stringify(given)}`);
    else args[key] = Number(given);
  }
  return args as N & S;
}

/** `steadyRate` → `steady-rate`. */
const optionOf = (key: string) => key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
