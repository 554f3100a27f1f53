// Catching up from the events API, as written: `PROPSYNC_KEY=sk_test_… node examples/catch-up.mjs` (Node 20+, no
// packages). Reads every event after the last one handled (kept in .catch-up-checkpoint), hands each to the same
// handler a webhook receiver would use, and stops when it has caught up. Run it again later to carry on.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';

const api = process.env.PROPSYNC_API ?? 'http://127.0.0.1:3000';
const key = process.env.PROPSYNC_KEY;
const checkpointFile = process.env.CHECKPOINT_FILE ?? '.catch-up-checkpoint';
if (!key) {
  console.error('set PROPSYNC_KEY to an API key (sk_test_… or sk_live_…)');
  process.exit(2);
}

const seen = new Set(); // a real handler dedupes on the event id in its own store
async function handleOnce(id, event) {
  if (seen.has(id)) return;
  seen.add(id);
  console.log(`${event.type} ${id} ${event.created_at}`);
}

let after = existsSync(checkpointFile) ? readFileSync(checkpointFile, 'utf8').trim() || undefined : undefined;
for (;;) {
  const url = new URL('/v1/events', api);
  url.searchParams.set('limit', '100');
  if (after) url.searchParams.set('after', after);
  const res = await fetch(url, { headers: { authorization: `Bearer ${key}` } });
  if (res.status === 404)
    throw new Error(`checkpoint ${after} is older than 30 days or unknown: delete ${checkpointFile}, start over, and re-read the records`);
  if (!res.ok) throw new Error(`GET ${url} answered ${res.status}: ${await res.text()}`);
  const page = await res.json();
  for (const event of page.results) {
    await handleOnce(event.id, event);
    after = event.id;
    writeFileSync(checkpointFile, after);
  }
  if (!page.meta.hasMore) break; // caught up; webhooks carry on from here
}
console.log(after ? `caught up to ${after}` : 'no events yet');
