/** How every bench reports: its figures as it prints them, a failed check, and how it ends. */

/** A check of the run's own outcome failed: the bench exits 1 and prints no ratio. */
export class CheckFailed extends Error {
  override name = 'CheckFailed';
}

export const int = (n: number): string => Math.round(n).toLocaleString('en-US');
export const secs = (ms: number): string => (ms / 1000).toFixed(2);

/**
 * Runs the bench's `main` and ends the process: exit 0 when it resolved, 1 when it threw (a failed check said in one
 * line, anything else with its stack), in both cases after the bench's last line of output, `lastLine(passed)` as
 * JSON (none when it returns undefined): on a failure it must carry no ratio.
 */
export function endBench(name: string, main: () => Promise<void>, lastLine: (passed: boolean) => object | undefined = () => undefined): void {
  const end = (passed: boolean) => {
    const line = lastLine(passed);
    if (line) console.log(JSON.stringify(line));
    process.exit(passed ? 0 : 1);
  };
  main().then(
    () => end(true),
    (err: unknown) => {
      console.error(err instanceof CheckFailed ? `\n[bench:${name}] FAILED: ${err.message}` : err);
      end(false);
    },
  );
}
