/**
 * The operator console (/console): server-rendered pages over the admin API. Signing in with the admin token opens
 * a session (session.ts); every page reads and every form changes things through the admin API in-process
 * (admin.ts), so the console has no rule of its own. Forms are protected twice against cross-site requests: the
 * browser's Origin / Sec-Fetch-Site must be this site (hono/csrf), and the form must carry the session's token.
 * Nothing the console serves, except its static assets, may be cached. The sign-in checks the token through the admin
 * API's guard (admin/auth.ts), so wrong sign-ins and wrong bearers are throttled together.
 */
import { Hono, type Context, type MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { csrf } from 'hono/csrf';
import { HTTPException } from 'hono/http-exception';
import { secureHeaders } from 'hono/secure-headers';
import type { AdminTokenGuard } from '../admin/auth';
import { isDatabaseUnavailable } from '../../db/errors';
import type { ApiDeps } from '../deps';
import { apiErrorOf } from '../middleware/errors';
import { ApiError, problemBody, type ProblemBody } from '../problem';
import { adminClient, AdminProblem } from './admin';
import { CONSOLE_CSS, CONSOLE_JS, htmxSource } from './assets';
import { field, type ConsoleEnv } from './context';
import { registerAutomationPages } from './pages/automations';
import { registerIntegrationPages } from './pages/integrations';
import { registerOperationPages } from './pages/operations';
import { registerOrganizationPages } from './pages/organizations';
import { registerWebhookPages } from './pages/webhooks';
import { createSessions, sameSecret } from './session';
import { Layout, ProblemView, type Ui } from './ui';

const MAX_FORM_BYTES = 64 * 1024;

/**
 * Where to go after signing in: a console page of this site only (never another host, a protocol-relative path, or
 * a path that dot segments take out of /console): the path as a browser resolves it, which must stay in /console.
 */
function safeNext(next: string | undefined): string {
  const fallback = '/console/organizations';
  if (!next || !/^\/console(\/[^/\\]|$|\?)/.test(next) || next.includes('//') || next.includes('\\')) return fallback;
  const resolved = new URL(next, 'http://console.invalid');
  return resolved.origin === 'http://console.invalid' && /^\/console(\/|$)/.test(resolved.pathname) ? resolved.pathname + resolved.search : fallback;
}

export function createConsole(deps: ApiDeps, adminRoutes: Hono, adminToken: AdminTokenGuard): Hono {
  const sessions = createSessions(deps.db, {
    adminToken: deps.config.ADMIN_TOKEN,
    ttlMs: deps.config.CONSOLE_SESSION_HOURS * 3_600_000,
    publicBaseUrl: deps.config.PUBLIC_BASE_URL,
  });
  const admin = adminClient(deps, adminRoutes);
  const app = new Hono<ConsoleEnv>();
  const baseUi = { temporalUi: deps.config.TEMPORAL_UI_URL, namespace: deps.config.TEMPORAL_NAMESPACE };
  const publicOrigin = new URL(deps.config.PUBLIC_BASE_URL).origin;

  const render = (c: Context, problem: ProblemBody, ui: Ui | null) =>
    c.html(
      <Layout ui={ui} title={problem.title} crumbs={[['Console', '/console']]}>
        <ProblemView problem={problem} />
        <p>
          <a href="/console">Console home</a>
        </p>
      </Layout>,
      problem.status as 400,
    );

  app.onError((err, c) => {
    const ui = (c.get('ui') as Ui | undefined) ?? null;
    if (err instanceof AdminProblem) {
      if (err.retryAfter) c.header('retry-after', err.retryAfter);
      return render(c, err.problem, ui);
    }
    const requestId = (c.get('requestId' as never) as string | undefined) ?? '';
    const path = new URL(c.req.url).pathname;
    // A database that cannot be reached (a session's look-up, a page's own query): the 503 with Retry-After that the
    // API answers, counted as the API counts it.
    const known =
      err instanceof ApiError ? err : isDatabaseUnavailable(err) ? apiErrorOf(err, deps.logger, { request_id: requestId, method: c.req.method, path }) : null;
    if (known) {
      for (const [name, value] of Object.entries(known.opts.headers ?? {})) c.header(name, value);
      return render(c, problemBody(deps.config, known, path, requestId), ui);
    }
    if (err instanceof HTTPException && err.status === 403) {
      // hono/csrf: the browser said the form came from another site.
      const refused = new ApiError(
        'forbidden',
        'Cross-site form posts are refused: this form was not sent from a console page of this site. Nothing was changed.',
      );
      return render(c, problemBody(deps.config, refused, path, requestId), ui);
    }
    if (err instanceof HTTPException && err.status < 500) {
      return render(c, problemBody(deps.config, new ApiError('bad_request', err.message || 'The request could not be processed.'), path, requestId), ui);
    }
    deps.logger.error({ err, request_id: requestId, method: c.req.method, path }, 'console error');
    return render(
      c,
      problemBody(deps.config, new ApiError('internal_error', 'An unexpected error occurred; quote the request id if it persists.'), path, requestId),
      ui,
    );
  });

  // A page asked for with a trailing slash (`/console/`, a bookmark of `/console/organizations/`) is the page without
  // it: redirected before anything else, within the console (a path that reached this app starts with /console/).
  app.use('*', async (c, next) => {
    const url = new URL(c.req.url);
    if ((c.req.method === 'GET' || c.req.method === 'HEAD') && url.pathname.startsWith('/console/') && url.pathname.endsWith('/')) {
      return c.redirect(`${url.pathname.replace(/\/+$/, '')}${url.search}`, 301);
    }
    await next();
  });

  // Static assets: versioned with the service, cacheable, public (the sign-in page needs them).
  const asset = (type: string, body: () => string) => (c: Context) => c.body(body(), 200, { 'content-type': type, 'cache-control': 'public, max-age=3600' });
  app.get(
    '/assets/console.css',
    asset('text/css; charset=utf-8', () => CONSOLE_CSS),
  );
  app.get(
    '/assets/console.js',
    asset('text/javascript; charset=utf-8', () => CONSOLE_JS),
  );
  app.get('/assets/htmx.min.js', asset('text/javascript; charset=utf-8', htmxSource));

  app.use(
    '*',
    secureHeaders({
      contentSecurityPolicy: {
        defaultSrc: ["'self'"],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'"],
        imgSrc: ["'self'", 'data:'],
        connectSrc: ["'self'"],
        formAction: ["'self'"],
        frameAncestors: ["'none'"],
        baseUri: ["'none'"],
        objectSrc: ["'none'"],
      },
      referrerPolicy: 'same-origin',
      xFrameOptions: 'DENY',
    }),
    async (c, next) => {
      await next();
      c.header('cache-control', 'no-store');
      c.header('vary', 'Cookie');
    },
    // A form post must come from a page of this site: the Origin it names, or Sec-Fetch-Site: same-origin.
    csrf({
      origin: (origin, c) => {
        const own = new URL(c.req.url);
        const proto = c.req.header('x-forwarded-proto')?.split(',')[0]?.trim() ?? own.protocol.replace(':', '');
        const host = c.req.header('host') ?? own.host;
        return origin === `${proto}://${host}` || origin === publicOrigin;
      },
    }),
    bodyLimit({
      maxSize: MAX_FORM_BYTES,
      onError: () => {
        throw new ApiError('payload_too_large', `The form exceeds ${MAX_FORM_BYTES / 1024} KiB.`);
      },
    }),
  );

  app.get('/sign-in', async (c) => {
    if (await sessions.find(c)) return c.redirect(safeNext(c.req.query('next')), 303);
    return c.html(<SignIn next={safeNext(c.req.query('next'))} />);
  });

  app.post('/sign-in', async (c) => {
    const next = safeNext(await field(c, 'next'));
    const token = await field(c, 'token');
    let right = false;
    try {
      right = token !== '' && (await adminToken.verify(c, token));
    } catch (err) {
      // Throttled: the sign-in page again, with the problem and when to try again.
      if (!(err instanceof ApiError) || err.slug !== 'rate_limit_exceeded') throw err;
      const problem = problemBody(deps.config, err, new URL(c.req.url).pathname, (c.get('requestId' as never) as string | undefined) ?? '');
      return c.html(<SignIn next={next} problem={problem} />, 429, err.opts.headers);
    }
    if (!right) return c.html(<SignIn next={next} error="That is not the admin token of this deployment (ADMIN_TOKEN)." />, 401);
    await sessions.open(c);
    return c.redirect(next, 303);
  });

  app.post('/sign-out', async (c) => {
    await sessions.close(c);
    return c.redirect('/console/sign-in', 303);
  });

  // Everything else needs a session; a form also needs the session's CSRF token.
  const requireSession: MiddlewareHandler<ConsoleEnv> = async (c, next) => {
    const session = await sessions.find(c);
    if (!session) {
      const url = new URL(c.req.url);
      const back = c.req.method === 'GET' ? `${url.pathname}${url.search}` : undefined;
      // A live region's poll (htmx) whose session ended: send the whole page to the sign-in, not into the region.
      if (c.req.header('hx-request')) return c.body(null, 401, { 'hx-redirect': `/console/sign-in?next=${encodeURIComponent(back ?? '/console')}` });
      return c.redirect(`/console/sign-in${back ? `?next=${encodeURIComponent(back)}` : ''}`, 303);
    }
    c.set('session', session);
    c.set('ui', { ...baseUi, csrf: session.csrf, url: new URL(c.req.url) });
    if (c.req.method !== 'GET' && c.req.method !== 'HEAD') {
      const token = await field(c, '_csrf');
      if (!token || !sameSecret(token, session.csrf)) {
        throw new ApiError(
          'forbidden',
          'The form is missing its CSRF token or carries one of another session (was it open in an older tab?). Reload the page and submit it again. Nothing was changed.',
        );
      }
    }
    await next();
  };
  app.use('*', requireSession);

  app.get('/', (c) => c.redirect('/console/organizations', 303));
  registerOrganizationPages(app, admin);
  registerIntegrationPages(app, admin);
  registerWebhookPages(app, admin);
  registerOperationPages(app, admin);
  registerAutomationPages(app, admin);

  app.all('*', (c) => {
    throw new ApiError('not_found', `The console has no page ${new URL(c.req.url).pathname}.`);
  });
  return app as unknown as Hono;
}

const SignIn = ({ next, error, problem }: { next: string; error?: string; problem?: ProblemBody }) => (
  <Layout ui={null} title="Sign in">
    <div class="signin card">
      <p>
        Sign in with the deployment's admin token (the <code>ADMIN_TOKEN</code> the API was started with). The session lasts until you sign out or it expires.
      </p>
      {error && (
        <p class="problem" role="alert">
          {error}
        </p>
      )}
      {problem && <ProblemView problem={problem} />}
      <form method="post" action="/console/sign-in" class="stack">
        <input type="hidden" name="next" value={next} />
        <label>
          Admin token
          <input type="password" name="token" autocomplete="current-password" required autofocus />
        </label>
        <button type="submit">Sign in</button>
      </form>
    </div>
  </Layout>
);
