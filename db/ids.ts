/** Id generation (impure: time and randomness). Never imported by workflows. */
import { monotonicFactory } from 'ulid';
import { ID_PREFIX, type IdKind } from '../domain/ids';

const ulid = monotonicFactory();

export function newId(kind: IdKind): string {
  return ID_PREFIX[kind] + ulid();
}
