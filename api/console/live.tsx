/**
 * The parts of a console page that htmx follows live: a region it re-reads every 2 s while what it shows is still
 * moving, and a list of runs, Operations or deliveries in one.
 */
import type { FC, PropsWithChildren } from 'hono/jsx';
import { ListTable, type ListTableProps, type Ui } from './ui';

/** A run or Operation still queued or running: what a page follows live. */
export const isLive = (status: string) => status === 'queued' || status === 'running';

/** While `active`, htmx re-reads this page every 2 s and replaces the element with the new one of the same id. */
export const LiveRegion: FC<PropsWithChildren<{ id: string; ui: Ui; active: boolean }>> = ({ id, ui, active, children }) =>
  active ? (
    <div id={id} hx-get={`${ui.url.pathname}${ui.url.search}`} hx-trigger="every 2s" hx-select={`#${id}`} hx-swap="outerHTML" aria-live="polite">
      {children}
    </div>
  ) : (
    <div id={id} aria-live="polite">
      {children}
    </div>
  );

/**
 * A ListTable of runs, Operations or deliveries, each row's data-status its status, in a LiveRegion of `id` that htmx
 * re-reads while a row shown is `live` (by default: still queued or running).
 */
export function LiveListTable<T extends { status: string }>({
  id,
  ui,
  live = isLive,
  ...table
}: Omit<ListTableProps<T>, 'status'> & { id: string; ui: Ui; live?: (status: string) => boolean }) {
  return (
    <LiveRegion id={id} ui={ui} active={table.list.page.results.some((row) => live(row.status))}>
      <ListTable {...table} status={(row) => row.status} />
    </LiveRegion>
  );
}
