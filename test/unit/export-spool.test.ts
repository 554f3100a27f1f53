/**
 * The automations role sweeps, at start, the temporary folders of spooled exports (`content_length`) that a worker
 * killed mid-attempt left behind (tenant data on the worker's disk), and none an attempt may still be using.
 */
import { mkdtemp, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { sweepSpoolFolders } from '../../activities/export';

const made: string[] = [];
afterAll(async () => Promise.all(made.map((f) => rm(f, { recursive: true, force: true }))));

async function spool(ageMs: number): Promise<string> {
  const folder = await mkdtemp(path.join(os.tmpdir(), 'propsync-export-'));
  made.push(folder);
  await writeFile(path.join(folder, 'export.csv'), 'id\n');
  const at = new Date(Date.now() - ageMs);
  await utimes(folder, at, at);
  return path.basename(folder);
}

it('removes the spool folders older than an attempt can last, and keeps the others', async () => {
  const hour = 3_600_000;
  const left = await spool(2 * hour);
  const running = await spool(10 * 60_000);
  const other = await mkdtemp(path.join(os.tmpdir(), 'not-propsync-'));
  made.push(other);
  await utimes(other, new Date(Date.now() - 2 * hour), new Date(Date.now() - 2 * hour));

  expect(await sweepSpoolFolders(hour + 60_000)).toBeGreaterThanOrEqual(1);
  const names = await readdir(os.tmpdir());
  expect(names).not.toContain(left);
  expect(names).toContain(running);
  expect(names).toContain(path.basename(other));
});
