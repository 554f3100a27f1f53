/**
 * What every console page is built on, apart from the console's own set-up (index.tsx): the app type pages register
 * their routes on, with the session and UI context the sign-in middleware puts on each request, and the form-field
 * readers. Kept out of index.tsx so that pages never import the module that imports them.
 */
import type { Context, Hono } from 'hono';
import type { AdminClient, Page } from './admin';
import type { ConsoleSession } from './session';
import { listQuery, pagingOf, type List, type Ui } from './ui';

export type ConsoleEnv = { Variables: { session: ConsoleSession; ui: Ui } };
export type ConsoleApp = Hono<ConsoleEnv>;

/** The form field, as a string ('' when absent or a file). */
export async function field(c: Context, name: string): Promise<string> {
  const body = await c.req.parseBody({ all: true });
  const v = body[name];
  const first = Array.isArray(v) ? v[0] : v;
  return typeof first === 'string' ? first : '';
}

/** Every value of a repeated form field (checkboxes). */
export async function fields(c: Context, name: string): Promise<string[]> {
  const body = await c.req.parseBody({ all: true });
  const v = body[name];
  return (Array.isArray(v) ? v : v === undefined ? [] : [v]).filter((x): x is string => typeof x === 'string');
}

/**
 * One page of an admin list as this console page's query string asks for it: `<prefix>offset` and `<prefix>order`
 * (a prefix where a page shows two lists), and the `filters` it names, passed on to the admin API as they are.
 */
export async function loadList<T>(
  c: Context<ConsoleEnv>,
  admin: AdminClient,
  path: string,
  how: { order: 'asc' | 'desc'; prefix?: string; filters?: string[] },
): Promise<List<T>> {
  const { url } = c.get('ui');
  const paging = pagingOf(url, how, how.prefix);
  const filters = Object.fromEntries((how.filters ?? []).map((name) => [name, url.searchParams.get(name) ?? '']));
  const page = await admin.get<Page<T>>(c, path, { ...listQuery(paging), ...filters });
  return { url, paging, page, filtered: Object.values(filters).some(Boolean) };
}
