/**
 * The console's building blocks (Hono JSX, rendered on the server): the page frame, forms that carry the session's
 * CSRF token, times shown in the viewer's zone with UTC on hover, status badges, tables with paging and sorting,
 * empty states, problem details and links to the Temporal UI.
 */
import type { Child, FC, PropsWithChildren } from 'hono/jsx';
import type { ProblemBody } from '../problem';
import type { Page } from './admin';

/** What every page needs: the session's CSRF token, the Temporal UI to link to, and the request's own URL. */
export interface Ui {
  csrf: string;
  temporalUi: string;
  namespace: string;
  url: URL;
}

export const Layout: FC<PropsWithChildren<{ ui: Ui | null; title: string; crumbs?: [string, string?][]; notice?: string }>> = ({
  ui,
  title,
  crumbs,
  notice,
  children,
}) => (
  <html lang="en">
    <head>
      <meta charset="utf-8" />
      <meta name="viewport" content="width=device-width, initial-scale=1" />
      <link rel="icon" href="data:," />
      <meta name="htmx-config" content='{"includeIndicatorStyles":false,"allowEval":false,"allowScriptTags":false}' />
      <title>{`${title} · Property Data Sync console`}</title>
      <link rel="stylesheet" href="/console/assets/console.css" />
      <script src="/console/assets/htmx.min.js" defer></script>
      <script src="/console/assets/console.js" defer></script>
    </head>
    <body>
      <header class="top">
        <a class="brand" href="/console">
          Property Data Sync · console
        </a>
        {ui && (
          <nav>
            <a href="/console/organizations">Organizations</a>
            <a href="/docs">API docs</a>
            <a href={`${ui.temporalUi}/namespaces/${encodeURIComponent(ui.namespace)}/workflows`} rel="noreferrer">
              Temporal UI
            </a>
            <Form ui={ui} action="/console/sign-out">
              <button type="submit">Sign out</button>
            </Form>
          </nav>
        )}
      </header>
      <main>
        {crumbs && crumbs.length > 0 && (
          <div class="crumbs">
            {crumbs.map(([label, href], i) => (
              <>
                {i > 0 && ' / '}
                {href ? <a href={href}>{label}</a> : <span>{label}</span>}
              </>
            ))}
          </div>
        )}
        <h1>{title}</h1>
        {notice && (
          <p class="notice" role="status">
            {notice}
          </p>
        )}
        {children}
      </main>
    </body>
  </html>
);

/** A POST form with the session's CSRF token. */
export const Form: FC<PropsWithChildren<{ ui: Ui; action: string; class?: string; confirm?: string }>> = ({ ui, action, children, confirm, ...rest }) => (
  <form method="post" action={action} class={rest.class ?? 'inline'} data-confirm={confirm}>
    <input type="hidden" name="_csrf" value={ui.csrf} />
    {children}
  </form>
);

/** A UTC instant: the viewer's local time once the page's script runs, the UTC value on hover and without script. */
export const Time: FC<{ iso: string | null | undefined }> = ({ iso }) =>
  iso ? (
    <time datetime={iso} title={`${iso.replace('T', ' ').replace(/\.\d+Z$|Z$/, '')} UTC`}>
      {iso.replace('T', ' ').replace(/\.\d+Z$|Z$/, '')} UTC
    </time>
  ) : (
    <span class="muted">—</span>
  );

export const Badge: FC<{ status: string }> = ({ status }) => <span class={`badge ${status}`}>{status}</span>;

const Empty: FC<PropsWithChildren> = ({ children }) => <div class="empty">{children}</div>;

/** The link to a workflow in the Temporal UI: the same id the console shows. */
export const TemporalLink: FC<{ ui: Ui; workflowId: string; label?: string }> = ({ ui, workflowId, label }) => (
  <a href={`${ui.temporalUi}/namespaces/${encodeURIComponent(ui.namespace)}/workflows/${encodeURIComponent(workflowId)}`} rel="noreferrer" target="_blank">
    {label ?? 'Temporal UI ↗'}
  </a>
);

/** A table row's link to the page of the thing it lists, by its id. */
export const IdLink: FC<{ href: string; id: string }> = ({ href, id }) => (
  <a href={href} class="mono">
    {id}
  </a>
);

/** A table row's link to its workflow in the Temporal UI. */
export const WorkflowLink: FC<{ ui: Ui; id: string }> = ({ ui, id }) => <TemporalLink ui={ui} workflowId={id} label="Workflow ↗" />;

/** A problem detail from the admin API (or the console), as it is. */
export const ProblemView: FC<{ problem: ProblemBody }> = ({ problem }) => (
  <section class="problem" role="alert">
    <h2>
      {problem.status} {problem.title}
    </h2>
    <p>{problem.detail}</p>
    {problem.errors && problem.errors.length > 0 && (
      <ul>
        {problem.errors.map((e) => (
          <li>
            <code>{e.pointer}</code>: {e.detail}
          </li>
        ))}
      </ul>
    )}
    <p class="muted">
      <a href={problem.type}>{problem.type}</a> · request <code>{problem.request_id}</code>
    </p>
  </section>
);

export const Facts: FC<{ rows: [string, Child][] }> = ({ rows }) => (
  <dl class="facts">
    {rows.map(([k, v]) => (
      <>
        <dt>{k}</dt>
        <dd>{v}</dd>
      </>
    ))}
  </dl>
);

/** The facts of the thing a page shows, on a card. */
export const FactsCard: FC<{ rows: [string, Child][] }> = ({ rows }) => (
  <div class="card">
    <Facts rows={rows} />
  </div>
);

/** The URL of this page with some query parameters changed (undefined removes one). */
function withQuery(url: URL, changes: Record<string, string | number | undefined>): string {
  const next = new URL(url);
  for (const [k, v] of Object.entries(changes)) {
    if (v === undefined || v === '') next.searchParams.delete(k);
    else next.searchParams.set(k, String(v));
  }
  return `${next.pathname}${next.search}`;
}

/** Paging and sorting read from the page's query string (`<prefix>offset`, `<prefix>order`), checked and clamped. */
export interface Paging {
  limit: number;
  offset: number;
  order: 'asc' | 'desc';
  prefix: string;
}

export function pagingOf(url: URL, defaults: { order: 'asc' | 'desc'; limit?: number }, prefix = ''): Paging {
  const offset = Number.parseInt(url.searchParams.get(`${prefix}offset`) ?? '0', 10);
  const order = url.searchParams.get(`${prefix}order`);
  return {
    limit: defaults.limit ?? 25,
    offset: Number.isSafeInteger(offset) && offset > 0 ? offset : 0,
    order: order === 'asc' || order === 'desc' ? order : defaults.order,
    prefix,
  };
}

/** The query an admin list endpoint takes for a Paging. */
export const listQuery = (p: Paging) => ({ limit: p.limit, offset: p.offset, order: p.order });

/** A column header that sorts the list by creation time, both ways, from the first page. */
export const SortHeader: FC<{ url: URL; paging: Paging; label: string }> = ({ url, paging, label }) => {
  const next = paging.order === 'desc' ? 'asc' : 'desc';
  const arrow = paging.order === 'desc' ? '↓' : '↑';
  return (
    <a
      href={withQuery(url, { [`${paging.prefix}order`]: next, [`${paging.prefix}offset`]: undefined })}
      title={`Sort ${next === 'asc' ? 'oldest' : 'newest'} first`}
    >
      {label} {arrow}
    </a>
  );
};

const Pager: FC<{ url: URL; paging: Paging; page: Page<unknown> }> = ({ url, paging, page }) => {
  const { offset, limit } = paging;
  if (offset === 0 && !page.meta.hasMore) return <></>;
  return (
    <nav class="pager" aria-label="Pages">
      {offset > 0 ? <a href={withQuery(url, { [`${paging.prefix}offset`]: Math.max(0, offset - limit) || undefined })}>← Previous page</a> : <span />}
      <span>{page.results.length === 0 ? 'No rows' : `Rows ${offset + 1}–${offset + page.results.length}`}</span>
      {page.meta.hasMore && <a href={withQuery(url, { [`${paging.prefix}offset`]: offset + limit })}>Next page →</a>}
    </nav>
  );
};

/** A column of a Table: its header, what its cell shows of a row, and the cell's class. */
export interface Column<T> {
  head: Child;
  cell: (row: T) => Child;
  class?: string;
  /** Hidden at phone width, header and cells. */
  narrow?: boolean;
}

const cellClass = (c: Column<never>) => (c.narrow ? (c.class ? `${c.class} hide-sm` : 'hide-sm') : c.class);

interface TableProps<T> {
  rows: readonly T[];
  columns: Column<T>[];
  /** Shown instead of the table when there are no rows. */
  empty: Child;
  label?: string;
  /** A row's `data-status`. */
  status?: (row: T) => string;
}

/** A table of `rows`, a cell of each column for each. */
export function Table<T>({ rows, columns, empty, label, status }: TableProps<T>) {
  return rows.length === 0 ? (
    <Empty>{empty}</Empty>
  ) : (
    <div class="table-wrap">
      <table aria-label={label}>
        <thead>
          <tr>
            {columns.map((c) => (
              <th scope="col" class={c.narrow ? 'hide-sm' : undefined}>
                {c.head}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr data-status={status?.(row)}>
              {columns.map((c) => (
                <td class={cellClass(c)}>{c.cell(row)}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** One page of a list, the Paging it was read with, and the URL of the console page that shows it. */
export interface List<T> {
  url: URL;
  paging: Paging;
  page: Page<T>;
  /** Whether the page's query string filters the list. */
  filtered: boolean;
}

export type ListTableProps<T> = Omit<TableProps<T>, 'rows'> & { list: List<T>; sortBy?: string };

/** A Table of one page of a list with its Pager; the header of the column `sortBy` sorts the list by creation time. */
export function ListTable<T>({ list, sortBy, columns, ...table }: ListTableProps<T>) {
  const { url, paging, page } = list;
  const heads = columns.map((c) => (sortBy !== undefined && c.head === sortBy ? { ...c, head: <SortHeader url={url} paging={paging} label={sortBy} /> } : c));
  return (
    <>
      {/* A page past the last one is not an empty list: say so, whatever the list would say when empty. */}
      <Table {...table} rows={page.results} columns={heads} empty={paging.offset > 0 ? 'Nothing more: this page is past the last one.' : table.empty} />
      <Pager url={url} paging={paging} page={page} />
    </>
  );
}

/** A section of a page that lists one page of a list: its heading, and the ListTable labelled with it. */
export function ListSection<T>({ title, ...table }: Omit<ListTableProps<T>, 'label'> & { title: string }) {
  return (
    <>
      <h2>{title}</h2>
      <ListTable {...table} label={title} />
    </>
  );
}

export const Tabs: FC<{ current: string; tabs: [string, string][] }> = ({ current, tabs }) => (
  <nav class="tabs">
    {tabs.map(([label, href]) => (
      <a href={href} aria-current={href === current ? 'page' : undefined}>
        {label}
      </a>
    ))}
  </nav>
);

/** A secret shown once (an API key, a signing secret), with what to do with it. */
export const SecretOnce: FC<PropsWithChildren<{ label: string; value: string; after: string }>> = ({ label, value, after, children }) => (
  <section class="secret" aria-label={label} data-after={after}>
    <strong>{label}</strong>
    <code data-secret>{value}</code>
    <p>
      This is the only time it is shown: copy it now. Only its hash (for keys) or its encrypted form (for signing secrets) is stored. Reloading the page goes to
      the page below; it never sends the form again.
    </p>
    {children}
  </section>
);

/** A labelled select of `values`; `any` adds a first, empty choice (no filter). */
export const Select: FC<{ name: string; label: string; values: readonly string[]; selected?: string; any?: boolean }> = ({
  name,
  label,
  values,
  selected,
  any,
}) => (
  <label>
    {label}
    <select name={name}>
      {any && <option value="">any</option>}
      {values.map((v) => (
        <option value={v} selected={v === selected}>
          {v}
        </option>
      ))}
    </select>
  </label>
);

/** A GET form that filters the list of this page (its selects keep the current choice). */
export const FilterForm: FC<{ ui: Ui; filters: { name: string; label: string; values: readonly string[] }[] }> = ({ ui, filters }) => (
  <form method="get" action={ui.url.pathname} class="row">
    {filters.map((f) => (
      <Select {...f} selected={ui.url.searchParams.get(f.name) ?? ''} any />
    ))}
    <button type="submit" class="secondary">
      Filter
    </button>
  </form>
);
