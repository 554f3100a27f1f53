/** `operations`: writes (Operations) and how their write-back to the source went. */
import { id, listVerb, type Noun } from '../command';
import { usageError, waitTimeout, option, toggle } from '../flags';
import { errorLine, waitForOperation, waited, type Operation } from '../progress';

export const operations: Noun = {
  summary: 'Writes (Operations) and how their write-back to the source went',
  verbs: {
    get: {
      summary: 'Show an Operation; with --wait, poll until it succeeded or failed',
      args: ['operation_id'],
      flags: {
        wait: toggle('Poll, backing off with its attempts (1 s, 2 s, 4 s, … at most 30 s); exit 1 if it failed'),
        timeout: option('<seconds>', 'With --wait: give up waiting after this long (exit 1)'),
      },
      run: async ({ client, args, flags }) => {
        const timeout = waitTimeout(flags);
        if (timeout !== undefined && !flags.wait) throw usageError('--timeout applies to --wait only');
        const op = await client.request<Operation>('GET', `/operations/${id(args[0]!)}`);
        if (!flags.wait) return { output: op };
        const followed = await waitForOperation(client, op, { timeoutMs: timeout === undefined ? undefined : timeout * 1000 });
        return waited('operation', followed, timeout, 'the write goes on', (o) => `: ${errorLine(o.reconcile.last_error)}`);
      },
    },
    list: listVerb("List an integration's Operations, most recent first (never their request bodies)", '/integrations/{integration_id}/operations', {
      status: option('<status,...>', 'queued, running, succeeded or failed; a comma-separated list matches any'),
      type: option('<type,...>', 'e.g. lease.create or resident.update; a comma-separated list matches any'),
    }),
  },
};
