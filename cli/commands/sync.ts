/** `sync`: sync runs. */
import { defined, id, callVerb, listVerb, type Noun } from '../command';
import { pollMsFlag, option, toggle, waitFlags } from '../flags';
import { waitForJob, waited, type SyncJob } from '../progress';

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
        const followed = await waitForJob(client, job, { pollMs, timeoutMs: timeout === undefined ? undefined : timeout * 1000 });
        const ended = waited('sync job', followed, timeout, 'the run goes on', (j) => `: ${j.error ?? 'no error recorded'}`);
        if (ended.exitCode !== undefined) return ended;
        const final = ended.output;
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
