/**
 * The operator CLI's pieces that need no admin API: how an interrupt stops a live progress bar, how `sync run --wait`
 * keeps to its time-out, and how an API field's name is said as the flag it came from. The CLI as an operator runs
 * it is checked in test/integration/cli*.test.ts.
 */
import { EventEmitter } from 'node:events';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { flagOf, type AdminClient } from '../../cli/client';
import { stopOnInterrupt, waitForJob, type SyncJob } from '../../cli/progress';

/** A stream that keeps what is written to it. */
function sink(): { stream: PassThrough; text: () => string } {
  const stream = new PassThrough();
  let text = '';
  stream.on('data', (chunk: Buffer) => (text += chunk.toString()));
  return { stream, text: () => text };
}

describe('stopOnInterrupt', () => {
  for (const [signal, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const) {
    it(`on ${signal} stops the bar first, says on one line that the run goes on, and exits ${code}`, () => {
      const signals = new EventEmitter();
      const { stream, text } = sink();
      const happened: string[] = [];
      stopOnInterrupt(
        () => happened.push('stop'),
        () => 'stopped waiting: sync job syj_1 goes on',
        {
          signals,
          stream,
          exit: (c) => happened.push(`exit ${c}`),
        },
      );
      expect(signals.listenerCount('SIGINT')).toBe(1);
      expect(signals.listenerCount('SIGTERM')).toBe(1);
      signals.emit(signal);
      expect(happened).toEqual(['stop', `exit ${code}`]);
      expect(text()).toBe('stopped waiting: sync job syj_1 goes on\n');
      // Handled once: a second signal is Node's again.
      expect(signals.listenerCount('SIGINT')).toBe(0);
      expect(signals.listenerCount('SIGTERM')).toBe(0);
    });
  }

  it('leaves the signals alone once the bar stopped of itself', () => {
    const signals = new EventEmitter();
    const happened: string[] = [];
    const remove = stopOnInterrupt(
      () => happened.push('stop'),
      () => 'never said',
      { signals, stream: sink().stream, exit: (c) => happened.push(`exit ${c}`) },
    );
    remove();
    expect(signals.listenerCount('SIGINT')).toBe(0);
    expect(signals.listenerCount('SIGTERM')).toBe(0);
    signals.emit('SIGINT');
    expect(happened).toEqual([]);
  });
});

describe('waitForJob', () => {
  const job: SyncJob = {
    id: 'syj_01J8Z5Q3M3W6X9K0V7B2C4D6E8',
    status: 'running',
    records_seen: 0,
    records_new: 0,
    records_updated: 0,
    records_soft_deleted: 0,
    records_skipped: 0,
    error: null,
  };

  it('never sleeps past its time-out: each wait is at most the time left, then it says it timed out', async () => {
    let reads = 0;
    const client = {
      request: async () => {
        reads += 1;
        return job;
      },
    } as unknown as AdminClient;
    const startedAt = Date.now();
    // A poll interval far longer than the time-out: the first sleep is cut to the time left.
    const followed = await waitForJob(client, job, { pollMs: 10_000, timeoutMs: 300, stream: sink().stream as unknown as NodeJS.WriteStream });
    const took = Date.now() - startedAt;
    expect(followed).toEqual({ last: job, timedOut: true });
    expect(took).toBeGreaterThanOrEqual(290);
    expect(took).toBeLessThan(2_000);
    // It read the job once more at the deadline, and stopped there.
    expect(reads).toBe(1);
  });

  it('stops as soon as a read finds the job ended, before the time-out', async () => {
    const client = { request: async () => ({ ...job, status: 'succeeded' }) } as unknown as AdminClient;
    const followed = await waitForJob(client, job, { pollMs: 10, timeoutMs: 60_000, stream: sink().stream as unknown as NodeJS.WriteStream });
    expect(followed).toEqual({ last: { ...job, status: 'succeeded' }, timedOut: false });
  });
});

describe('flagOf', () => {
  const fields = {
    url: '--endpoint',
    event_types: '--events',
    '/source/size': '--size',
    filters: '--filter',
    '/destination/headers': '--header',
  };

  it('names the flag of a field, of a member of one, or of an item of a list', () => {
    expect(flagOf('url', fields)).toBe('--endpoint');
    expect(flagOf('/source/size', fields)).toBe('--size');
    expect(flagOf('/event_types/1', fields)).toBe('--events item 2');
    expect(flagOf('/filters/status', fields)).toBe('--filter status');
    expect(flagOf('/filters/a~1b', fields)).toBe('--filter a/b');
    expect(flagOf('/destination/headers/Authorization', fields)).toBe('--header Authorization');
  });

  it('knows nothing of a field whose flag has its name', () => {
    expect(flagOf('name', fields)).toBeUndefined();
    expect(flagOf('/source/type', fields)).toBeUndefined();
    expect(flagOf('/', fields)).toBeUndefined();
  });
});
