/** `operations`: writes (Operations) and how their write-back to the source went. */
import { int, defined, page, id, usageError, type Noun } from '../command';
import { oneLine, waitForOperation, type Operation } from '../progress';

export const operations: Noun = {
  summary: 'Writes (Operations) and how their write-back to the source went',
  verbs: {
    get: {
      summary: 'Show an Operation; with --wait, poll until it succeeded or failed',
      args: ['operation_id'],
      flags: {
        wait: { type: 'boolean', description: 'Poll, backing off with its attempts (1 s, 2 s, 4 s, … at most 30 s); exit 1 if it failed' },
        timeout: { type: 'string', value: '<seconds>', description: 'With --wait: give up waiting after this long (exit 1)' },
      },
      run: async ({ client, args, flags }) => {
        const timeout = int('timeout', flags.timeout);
        if (timeout !== undefined && timeout < 1) throw usageError(`--timeout must be at least 1 second, got ${timeout}`);
        if (timeout !== undefined && !flags.wait) throw usageError('--timeout applies to --wait only');
        const op = await client.request<Operation>('GET', `/operations/${id(args[0]!)}`);
        if (!flags.wait) return { output: op };
        const { operation, timedOut } = await waitForOperation(client, op, { timeoutMs: timeout === undefined ? undefined : timeout * 1000 });
        if (timedOut) {
          process.stderr.write(`error: operation ${operation.id} is still ${operation.status} after ${timeout} s; stopped waiting (the write goes on)\n`);
          return { output: operation, exitCode: 1 };
        }
        if (operation.status === 'failed') {
          process.stderr.write(`error: operation ${operation.id} failed: ${oneLine(operation.reconcile.last_error ?? '') || 'no error recorded'}\n`);
          return { output: operation, exitCode: 1 };
        }
        return { output: operation };
      },
    },
    list: {
      summary: "List an integration's Operations, most recent first (never their request bodies)",
      args: ['integration_id'],
      flags: {
        status: { type: 'string', value: '<status,...>', description: 'queued, running, succeeded or failed; a comma-separated list matches any' },
        type: { type: 'string', value: '<type,...>', description: 'e.g. lease.create or resident.update; a comma-separated list matches any' },
        ...page,
      },
      run: async ({ client, args, flags }) => {
        const q = new URLSearchParams(
          defined({ status: flags.status, type: flags.type, limit: int('limit', flags.limit), offset: int('offset', flags.offset) }) as Record<string, string>,
        );
        return { output: await client.request('GET', `/integrations/${id(args[0]!)}/operations${q.size ? `?${q}` : ''}`) };
      },
    },
  },
};
