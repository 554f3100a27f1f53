/**
 * The one polling helper of the tests: ask again every `intervalMs` until the answer is in, or fail after `timeoutMs`
 * saying what was awaited and the last answer seen. Wait for the thing a user would see (a row, a reply, a received
 * request), never for a fixed time; to show that something did not happen, wait for a later thing that must come after
 * it and then check.
 *
 *   await until('the job to finish', async () => (await jobOf(id))?.finishedAt ?? undefined);  // a value: done
 *   await until('a 401', async () => (await get()).status === 401);                           // true: done
 *   const [d] = await until('the delivery', () => deliveriesOf(id), (ds) => ds[0]?.status === 'succeeded');
 *
 * With one function, the answer is done unless it is `undefined` or `false`, and is returned; with two, the first
 * reads and the second says whether what it read will do, and what it read is returned. `what` may be left out.
 */

export interface UntilOptions {
  /** How long to keep asking (default 30 s). */
  timeoutMs?: number;
  /** Pause between two questions (default 100 ms). */
  intervalMs?: number;
  /** More to say when time is up (the logs of a child process, say). */
  detail?: () => string;
}

type Answer<T> = () => T | Promise<T>;
type Done<T> = Exclude<T, undefined | false>;

export function until<T>(check: Answer<T>, wait?: number | UntilOptions): Promise<Done<T>>;
export function until<T>(what: string, check: Answer<T>, wait?: number | UntilOptions): Promise<Done<T>>;
export function until<T>(read: Answer<T>, ok: (value: T) => boolean, wait?: number | UntilOptions): Promise<T>;
export function until<T>(what: string, read: Answer<T>, ok: (value: T) => boolean, wait?: number | UntilOptions): Promise<T>;
export async function until(...args: unknown[]): Promise<unknown> {
  const what = typeof args[0] === 'string' ? (args.shift() as string) : 'a condition';
  const read = args[0] as Answer<unknown>;
  const ok = typeof args[1] === 'function' ? (args[1] as (value: unknown) => boolean) : (v: unknown) => v !== undefined && v !== false;
  const wait = (typeof args[1] === 'function' ? args[2] : args[1]) as number | UntilOptions | undefined;
  const { timeoutMs = 30_000, intervalMs = 100, detail } = typeof wait === 'number' ? { timeoutMs: wait } : (wait ?? {});
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (ok(value)) return value;
    if (Date.now() > deadline) {
      const last = value === undefined ? 'undefined' : JSON.stringify(value)?.slice(0, 500);
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last answer: ${last}${detail ? `\n${detail()}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
