/**
 * The line protocol between a bench and a helper process that runs its commands one at a time for the whole bench
 * (the floors of bench:sync and bench:export, bench:writes's client, bench:webhooks's event writer): each command is
 * one JSON line on the child's stdin with an `id`, answered by one stdout line `<kind>-result <id> <json>` or
 * `<kind>-error <id> <message>`.
 */
import { createInterface } from 'node:readline';
import type { Child } from './processes';

/**
 * The child's side: runs the commands of stdin in order, one at a time, answering each; once stdin ends and the last
 * is answered, `end` (by default, exit).
 */
export function serveCommands<C extends { id: string }>(kind: string, run: (cmd: C) => Promise<unknown>, end: () => unknown = () => process.exit(0)): void {
  const lines = createInterface({ input: process.stdin });
  let queue = Promise.resolve();
  lines.on('line', (line) => {
    if (!line.trim()) return;
    queue = queue.then(async () => {
      let cmd: C | undefined;
      try {
        cmd = JSON.parse(line) as C;
        console.log(`${kind}-result ${cmd.id} ${JSON.stringify(await run(cmd))}`);
      } catch (err) {
        console.log(`${kind}-error ${cmd?.id ?? '?'} ${err instanceof Error ? (err.stack ?? err.message).replace(/\n/g, ' | ') : String(err)}`);
      }
    });
  });
  lines.once('close', () => void queue.then(end));
}

/**
 * The bench's side: sends `child` one command and resolves with its result; an error answer (or none within
 * `timeoutMs`) rejects, naming the child (`who`). Start the child with `echo: (l) => !l.startsWith('<kind>-result ')`
 * to keep the results out of the bench's output.
 */
export function commandsTo<C extends { id: string }, R>(child: Child, kind: string, who: string, timeoutMs: number): (cmd: Omit<C, 'id'>) => Promise<R> {
  let n = 0;
  return async (cmd) => {
    const id = `c${++n}`;
    const answer = child.line(new RegExp(`^${kind}-(result|error) ${id} (.*)$`), timeoutMs);
    child.send(JSON.stringify({ ...cmd, id }));
    const [, outcome, body] = await answer;
    if (outcome === 'error') throw new Error(`${who} failed: ${body}`);
    return JSON.parse(body!) as R;
  };
}
