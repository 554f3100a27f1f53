/** `sync`: sync runs. */
import { defined, id, callVerb, listVerb, type Noun } from '../command';
import { pollMsFlag, option, toggle, waitFlags } from '../flags';
import { waitForJob, type SyncJob } from '../progress';

export const sync: Noun = {
  summary: 'Sync runs',
  verbs: {
    run: {
      summary: 'Start a sync now; with --wait, follow it to its end',
      args: ['integration_id'],
      flags: {
        wait: toggle('Poll the job with a progress display on stderr; exit 1 if it fails'),
        'poll-ms': pollMsFlag,
        timeout: option('<seconds>', 'With --wait: give up waiting after this long (exit 1; the run goes on)'),
        kind: option(
          '<full|delta>',
          'full: read every record and find deletions now; delta: only what changed (sources that can list it). Default: as the cadence decides',
        ),
      },
      run: async ({ client, args, flags }) => {
        const { timeout, pollMs } = waitFlags(flags);
        const job = await client.request<SyncJob>('POST', `/integrations/${id(args[0]!)}/syncs`, defined({ kind: flags.kind }));
        if (!flags.wait) return { output: job };
        const final = await waitForJob(client, job, { pollMs, timeoutMs: timeout === undefined ? undefined : timeout * 1000 });
        if (final.status === 'failed') {
          process.stderr.write(`error: sync job ${final.id} failed: ${final.error ?? 'no error recorded'}\n`);
          return { output: final, exitCode: 1 };
        }
        if (final.status !== 'succeeded') {
          process.stderr.write(`error: sync job ${final.id} is still ${final.status} after ${timeout} s\n`);
          return { output: final, exitCode: 1 };
        }
        if (final.records_skipped > 0) {
          process.stderr.write(
            `warning: ${final.records_skipped} record(s) could not be read from the source and were skipped; see: sync skipped ${final.id}\n`,
          );
        }
        return { output: final };
      },
    },
    get: callVerb('Show a sync job', 'GET /sync_jobs/{sync_job_id}'),
    list: listVerb("List an integration's sync jobs, most recent first", '/integrations/{integration_id}/sync_jobs'),
    skipped: listVerb('List the records a sync job quarantined (unreadable in the source), with the reason', '/sync_jobs/{sync_job_id}/skipped_records'),
  },
};
