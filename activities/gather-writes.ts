/** Gathering a stream's small chunks into larger writes. */
import { Transform } from 'node:stream';

/**
 * A stream that passes its chunks on gathered into writes of at least `bytes` (the last may be shorter), starting with
 * `head` when given. A COPY sends a chunk a row, and writing each costs more than Postgres takes to make the row.
 * `onChunk` sees every chunk as it comes in.
 */
export function gatherWrites(bytes: number, opts: { head?: Buffer; onChunk?: (chunk: Buffer) => void } = {}): Transform {
  let pending: Buffer[] = opts.head ? [opts.head] : [];
  let pendingBytes = opts.head?.length ?? 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      opts.onChunk?.(chunk);
      pending.push(chunk);
      pendingBytes += chunk.length;
      if (pendingBytes < bytes) return done();
      const out = Buffer.concat(pending, pendingBytes);
      pending = [];
      pendingBytes = 0;
      done(null, out);
    },
    flush(done) {
      done(null, pendingBytes > 0 ? Buffer.concat(pending, pendingBytes) : undefined);
    },
  });
}
