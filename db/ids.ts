/** Id generation (impure: time and randomness). Never imported by workflows. */
import { randomFillSync } from 'node:crypto';
import { monotonicFactory } from 'ulid';
import { ID_PREFIX, type IdKind } from '../domain/ids';

/**
 * Random bytes from a pool refilled 4 KiB at a time: ulid's default source asks the OS for one byte per character,
 * which showed in the profiles of every request (its request id) and of every first id of a millisecond.
 */
const pool = new Uint8Array(4096);
let at = pool.length;
function pooledRandom(): number {
  if (at >= pool.length) {
    randomFillSync(pool);
    at = 0;
  }
  return pool[at++]! / 256;
}

/** A ULID, increasing within a millisecond. */
export const newUlid = monotonicFactory(pooledRandom);

export function newId(kind: IdKind): string {
  return ID_PREFIX[kind] + newUlid();
}
