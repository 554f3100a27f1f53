/** What the buildium flavour's routes share: their options, their context, and the wire's error answers. */
import type { Context } from 'hono';
import type { Company, Sql } from '../store';

export interface BuildiumOptions {
  sql: Sql;
  /** Delay of a `slow` fault that has none of its own. */
  slowMs: number;
  /** Seconds a rate-limited client is told to wait. */
  retryAfterSeconds?: number;
}

export type Env = { Variables: { company: Company; delayAfterMs: number | undefined } };

/** An error answer of this wire. */
export class WireError extends Error {
  constructor(
    readonly status: 400 | 401 | 404 | 409 | 429,
    message: string,
    readonly errors: { Key: string; Value: string }[] = [],
  ) {
    super(message);
  }
}

export const errorBody = (message: string, errors: { Key: string; Value: string }[] = []) => JSON.stringify({ UserMessage: message, Errors: errors });

export function answer(c: Context, status: number, text: string): Response {
  return c.body(text, status as 200, { 'content-type': 'application/json; charset=utf-8' });
}
