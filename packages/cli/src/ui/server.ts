import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { type Context, Hono } from 'hono';
import { getCookie, setCookie } from 'hono/cookie';
import { CSS, type Html, html, layout } from './html.js';
import {
  documentPage,
  type PageContext,
  reviewItemPage,
  reviewPage,
  runsPage,
  sourcesPage,
} from './pages.js';

/** A review decision taken in the browser, carried out by the caller through the engine. */
export type Decide = (
  action: 'approve' | 'reject',
  ids: readonly string[],
) => Promise<{ readonly ok: boolean; readonly message: string }>;

export interface UiServerOptions {
  readonly pages: PageContext;
  readonly decide: Decide;
  /** The secret of the login URL printed at start. */
  readonly token: string;
  /** Bound to loopback: reading needs no login (acting still does). */
  readonly loopback: boolean;
  /**
   * `host:port` values the Host header may carry (DNS-rebinding guard; see `dashboardHosts` in
   * allowed-hosts.ts),
   * lower-case, and so the Origin.
   */
  readonly allowedHosts: () => readonly string[];
}

const SESSION_COOKIE = 'rf_ui_session';

function equal(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

const SECURITY_HEADERS: Record<string, string> = {
  // No script runs in the dashboard at all: forms and links only. Crawled text that slipped past
  // escaping could still not execute.
  'content-security-policy':
    "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-content-type-options': 'nosniff',
  // same-origin, not no-referrer: under no-referrer a browser sends `Origin: null` with form POSTs.
  'referrer-policy': 'same-origin',
  'x-frame-options': 'DENY',
  'cache-control': 'no-store',
};

/**
 * The dashboard's HTTP surface (Hono). Reads are GETs; the only write is POST /review/decide,
 * which needs a logged-in session (the token printed at start), that session's CSRF token in
 * the form, and an `Origin` equal to the dashboard's own.
 */
export function createUiApp(o: UiServerOptions): Hono {
  const app = new Hono();
  const secret = randomBytes(32);
  const sessions = new Set<string>();
  const flashes = new Map<string, string>();
  const csrfOf = (session: string) =>
    createHmac('sha256', secret).update(`csrf:${session}`).digest('base64url');
  const sessionOf = (c: Context): string | undefined => {
    const s = getCookie(c, SESSION_COOKIE);
    return s !== undefined && sessions.has(s) ? s : undefined;
  };
  const refuse = (c: Context, status: 400 | 401 | 403 | 404, line: string) =>
    c.html(
      layout(
        { title: `${status}`, active: 'sources', authenticated: false },
        html`<p class="bad" data-refused="${status}">${line}</p>` as Html,
      ),
      status,
    );

  app.use('*', async (c, next) => {
    // A page on another site that resolves its own name to 127.0.0.1 (DNS rebinding) sends its
    // own Host; only the dashboard's addresses are answered.
    const host = (c.req.header('host') ?? '').toLowerCase();
    if (!o.allowedHosts().includes(host)) {
      const res = await refuse(
        c,
        403,
        'unexpected Host header; open the dashboard at the address ragfresh ui printed.',
      );
      for (const [k, v] of Object.entries(SECURITY_HEADERS)) res.headers.set(k, v);
      return res;
    }
    await next();
    for (const [k, v] of Object.entries(SECURITY_HEADERS)) c.res.headers.set(k, v);
  });

  app.get('/ui.css', (c) => c.body(CSS, 200, { 'content-type': 'text/css; charset=utf-8' }));

  app.get('/login', (c) => {
    const token = c.req.query('token') ?? '';
    if (!equal(token, o.token))
      return refuse(
        c,
        401,
        'wrong or missing token; use the login URL ragfresh ui printed at start.',
      );
    const session = randomBytes(24).toString('base64url');
    sessions.add(session);
    setCookie(c, SESSION_COOKIE, session, { httpOnly: true, sameSite: 'Strict', path: '/' });
    return c.redirect('/', 303);
  });

  // Bound beyond loopback, every page needs the login: crawled text and the queue are not public.
  app.use('*', async (c, next) => {
    if (!o.loopback && sessionOf(c) === undefined)
      return refuse(
        c,
        401,
        'this dashboard needs the login URL printed at start (it is not bound to loopback).',
      );
    await next();
  });

  const page = async (
    c: Context,
    title: string,
    active: 'sources' | 'review' | 'runs' | 'doc',
    body: Html,
  ) => {
    const session = sessionOf(c);
    const flash = session === undefined ? undefined : flashes.get(session);
    if (session !== undefined) flashes.delete(session);
    return c.html(
      layout(
        {
          title,
          active,
          authenticated: session !== undefined,
          ...(flash === undefined ? {} : { flash }),
        },
        body,
      ),
    );
  };
  const actions = (c: Context) => {
    const session = sessionOf(c);
    return session === undefined ? {} : { csrf: csrfOf(session) };
  };

  app.get('/', async (c) => page(c, 'Sources', 'sources', await sourcesPage(o.pages)));
  app.get('/review', async (c) => {
    const source = c.req.query('source');
    return page(
      c,
      'Review queue',
      'review',
      await reviewPage(o.pages, actions(c), {
        ...(source === undefined ? {} : { source }),
        all: c.req.query('all') === '1',
      }),
    );
  });
  app.get('/review/item', async (c) => {
    const id = c.req.query('id') ?? '';
    const body = await reviewItemPage(o.pages, actions(c), id);
    if (body === undefined) return refuse(c, 404, `no review item "${id}".`);
    return page(c, `Review item ${id}`, 'review', body);
  });
  app.get('/doc', async (c) => {
    const id = c.req.query('id') ?? '';
    const a = c.req.query('a');
    const b = c.req.query('b');
    const at = c.req.query('at');
    const doc = await documentPage(o.pages, id, {
      ...(a === undefined ? {} : { a }),
      ...(b === undefined ? {} : { b }),
      ...(at === undefined ? {} : { at }),
    });
    if (doc === undefined) return refuse(c, 404, `no document "${id}".`);
    return page(c, `Document: ${doc.title}`, 'doc', doc.body);
  });
  app.get('/runs', async (c) => {
    const source = c.req.query('source');
    const run = c.req.query('run');
    return page(
      c,
      'Runs',
      'runs',
      await runsPage(o.pages, {
        ...(source === undefined ? {} : { source }),
        ...(run === undefined ? {} : { run }),
      }),
    );
  });

  app.post('/review/decide', async (c) => {
    const origin = c.req.header('origin');
    if (origin === undefined || !o.allowedHosts().some((h) => origin === `http://${h}`))
      return refuse(
        c,
        403,
        'refused: the request did not come from this dashboard (Origin header).',
      );
    const session = sessionOf(c);
    if (session === undefined)
      return refuse(c, 401, 'refused: log in with the URL printed at start to act on the queue.');
    const form = await c.req.parseBody({ all: true });
    const csrf = form._csrf;
    if (typeof csrf !== 'string' || !equal(csrf, csrfOf(session)))
      return refuse(c, 403, 'refused: missing or wrong CSRF token; reload the page and try again.');
    const action = form.action;
    const raw = form.id;
    const ids = (Array.isArray(raw) ? raw : raw === undefined ? [] : [raw]).filter(
      (x): x is string => typeof x === 'string',
    );
    if ((action !== 'approve' && action !== 'reject') || ids.length === 0)
      return refuse(c, 400, 'refused: choose approve or reject and at least one item.');
    const result = await o.decide(action, ids);
    flashes.set(session, result.message);
    return c.redirect(
      ids.length === 1 ? `/review/item?id=${encodeURIComponent(ids[0]!)}` : '/review',
      303,
    );
  });

  app.notFound((c) => refuse(c, 404, 'no such page.'));
  // One line, like every CLI error; the page text never reaches the message unescaped.
  app.onError((err, c) =>
    c.html(
      layout(
        { title: '500', active: 'sources', authenticated: false },
        html`<p class="bad" data-refused="500">ragfresh ui: ${err.message}</p>` as Html,
      ),
      500,
    ),
  );
  return app;
}
