/**
 * The console's own style sheet and script, served from the service (no outside network, no build step), and the
 * pinned htmx it uses for partial updates (live sync progress), read from its npm package once.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

export const CONSOLE_CSS = `
:root { --fg:#1d2330; --muted:#5b6477; --line:#dde1e8; --bg:#f6f7f9; --card:#fff; --accent:#2457c5; --ok:#137a3a; --warn:#a15c00; --bad:#b3261e; --info:#44507a;
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
* { box-sizing: border-box; }
body { margin: 0; }
a { color: var(--accent); }
header.top { display:flex; flex-wrap:wrap; gap:.5rem 1.25rem; align-items:center; padding:.6rem 1.25rem; background:#182033; color:#fff; }
header.top a { color:#fff; text-decoration:none; }
header.top .brand { font-weight:600; margin-right:auto; }
header.top nav { display:flex; flex-wrap:wrap; gap:.25rem 1rem; align-items:center; }
header.top form { margin:0; }
header.top button { background:transparent; color:#fff; border:1px solid #56607a; }
main { max-width: 1180px; margin: 0 auto; padding: 1rem 1.25rem 3rem; }
h1 { font-size:1.45rem; margin:.6rem 0 .2rem; overflow-wrap:anywhere; }
h2 { font-size:1.1rem; margin:1.6rem 0 .5rem; }
.crumbs { color:var(--muted); font-size:.9rem; overflow-wrap:anywhere; }
.crumbs a { color:var(--muted); }
.tabs { display:flex; flex-wrap:wrap; gap:.25rem; margin:.8rem 0; border-bottom:1px solid var(--line); }
.tabs a { padding:.4rem .8rem; text-decoration:none; color:var(--muted); border-bottom:2px solid transparent; }
.tabs a[aria-current="page"] { color:var(--fg); border-bottom-color:var(--accent); font-weight:600; }
.card { background:var(--card); border:1px solid var(--line); border-radius:8px; padding:1rem; margin:.8rem 0; }
dl.facts { display:grid; grid-template-columns:max-content 1fr; gap:.3rem 1rem; margin:0; }
dl.facts dt { color:var(--muted); }
dl.facts dd { margin:0; overflow-wrap:anywhere; }
.table-wrap { overflow-x:auto; background:var(--card); border:1px solid var(--line); border-radius:8px; }
table { border-collapse:collapse; width:100%; font-size:.92rem; }
th, td { text-align:left; padding:.45rem .7rem; border-bottom:1px solid var(--line); vertical-align:top; }
th { background:#eef1f5; font-weight:600; white-space:nowrap; }
th a { color:inherit; }
tr:last-child td { border-bottom:0; }
td.num, th.num { text-align:right; font-variant-numeric:tabular-nums; }
td .mono, td code { white-space:nowrap; overflow-wrap:normal; }
td code.wrap { white-space:normal; overflow-wrap:anywhere; }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size:.88em; overflow-wrap:anywhere; }
.badge { display:inline-block; padding:.05rem .5rem; border-radius:999px; font-size:.8rem; font-weight:600; background:#e7eaf0; color:var(--info); white-space:nowrap; }
.badge.succeeded, .badge.active, .badge.completed, .badge.applied, .badge.reconciled { background:#dff3e6; color:var(--ok); }
.badge.failed, .badge.dead_lettered, .badge.rejected, .badge.revoked { background:#fbe3e1; color:var(--bad); }
.badge.running, .badge.retrying, .badge.pending, .badge.queued, .badge.delivering { background:#fff1d6; color:var(--warn); }
.badge.disabled, .badge.paused, .badge.canceled, .badge.cancelled { background:#eceef2; color:var(--muted); }
.pager { display:flex; gap:1rem; align-items:center; margin:.5rem 0; color:var(--muted); font-size:.9rem; flex-wrap:wrap; }
.empty { padding:1.2rem; color:var(--muted); background:var(--card); border:1px dashed var(--line); border-radius:8px; }
.notice { padding:.7rem 1rem; border-radius:8px; background:#e6efff; border:1px solid #b9cdf5; margin:.8rem 0; }
.problem { padding:.8rem 1rem; border-radius:8px; background:#fdecea; border:1px solid #f1b8b2; margin:.8rem 0; }
.problem h2 { margin:0 0 .3rem; color:var(--bad); }
[data-warn] { color:var(--bad); font-weight:600; background:#fbe3e1; padding:0 .3rem; border-radius:3px; }
.secret { padding:1rem; border-radius:8px; background:#fff8e1; border:1px solid #f0d28a; margin:.8rem 0; }
.secret code { display:block; font-size:1rem; padding:.5rem; background:#fff; border:1px solid var(--line); border-radius:6px; margin:.4rem 0; user-select:all; }
form.inline { display:inline; margin:0; }
form.stack { display:grid; gap:.6rem; max-width:560px; }
form.row { display:flex; flex-wrap:wrap; gap:.6rem; align-items:end; }
label { display:grid; gap:.2rem; font-size:.9rem; color:var(--muted); }
label.check { display:flex; gap:.4rem; align-items:center; color:var(--fg); }
fieldset { border:1px solid var(--line); border-radius:8px; padding:.5rem .8rem; display:flex; flex-wrap:wrap; gap:.3rem 1rem; }
input, select, textarea { font:inherit; padding:.4rem .5rem; border:1px solid #c5cbd6; border-radius:6px; background:#fff; color:var(--fg); min-width:0; }
button { font:inherit; padding:.4rem .9rem; border-radius:6px; border:1px solid var(--accent); background:var(--accent); color:#fff; cursor:pointer; }
button.secondary { background:#fff; color:var(--accent); }
button.danger { background:#fff; color:var(--bad); border-color:var(--bad); }
.muted { color:var(--muted); }
.grid2 { display:grid; grid-template-columns:repeat(auto-fit, minmax(320px, 1fr)); gap:0 1.5rem; }
pre { background:#0f1422; color:#e6e9f0; padding:.8rem; border-radius:8px; overflow:auto; font-size:.85rem; max-height:28rem; }
.signin { max-width:420px; margin:8vh auto; }
@media (max-width: 640px) {
  main { padding: .6rem .7rem 2rem; }
  th, td { padding:.35rem .45rem; }
  .hide-sm { display:none; }
  header.top { padding:.5rem .7rem; }
}
`;

/**
 * Times arrive as UTC ISO strings in <time datetime> with the UTC value as the hover title; this shows them in the
 * viewer's own zone (again after every htmx swap). Forms with data-confirm ask first. A page showing a secret once
 * takes the address of the page after it (data-after), so that reloading it does not send its form again.
 */
export const CONSOLE_JS = `
(function () {
  var fmt = new Intl.DateTimeFormat(undefined, { year: 'numeric', month: 'short', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', timeZoneName: 'short' });
  function localize(root) {
    var nodes = (root || document).querySelectorAll('time[datetime]');
    for (var i = 0; i < nodes.length; i++) {
      var d = new Date(nodes[i].getAttribute('datetime'));
      if (!isNaN(d.getTime())) nodes[i].textContent = fmt.format(d);
    }
  }
  document.addEventListener('DOMContentLoaded', function () {
    localize(document);
    // A secret shown once is the answer to a form: a reload would send the form again (another key, another
    // rotation). The page's address becomes the page to go to next, so a reload goes there instead.
    var once = document.querySelector('[data-after]');
    if (once && window.history.replaceState) window.history.replaceState(null, '', once.getAttribute('data-after'));
  });
  document.addEventListener('htmx:afterSwap', function (e) { localize(e.target); });
  document.addEventListener('submit', function (e) {
    var msg = e.target.getAttribute && e.target.getAttribute('data-confirm');
    if (msg && !window.confirm(msg)) e.preventDefault();
  });
})();
`;

let htmx: string | undefined;

/** htmx's minified bundle from the pinned npm package (read on first request, then kept). */
export function htmxSource(): string {
  htmx ??= readFileSync(createRequire(import.meta.url).resolve('htmx.org/dist/htmx.min.js'), 'utf8');
  return htmx;
}
