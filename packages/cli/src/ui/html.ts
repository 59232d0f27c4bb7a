import { html, raw } from 'hono/html';
import type { HtmlEscapedString } from 'hono/utils/html';

// Every page is built from `html` templates: each interpolated value is escaped (& < > " '),
// so crawled text, titles and URLs reach the page as text. `raw` is used only for markup this
// module writes itself. The CSP (server.ts) forbids every script, as a second line.
export type Html = HtmlEscapedString;
export { html, raw };

const as = (h: ReturnType<typeof html>): Html => h as Html;

/** A link only for http(s) URLs; anything else (`javascript:`, `data:`...) is shown as text. */
export function externalLink(url: string | undefined): Html {
  if (url === undefined || url === '') return as(html`<span class="muted">–</span>`);
  let ok = false;
  try {
    ok = ['http:', 'https:'].includes(new URL(url).protocol);
  } catch {
    ok = false;
  }
  return ok
    ? as(html`<a class="ext" href="${url}" rel="noopener noreferrer nofollow">${url}</a>`)
    : as(html`<code class="unsafe-url" title="not a web address; not linked">${url}</code>`);
}

/** A link inside the dashboard (path and query built here, values encoded). */
export function localHref(path: string, query: Record<string, string | undefined> = {}): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined) q.set(k, v);
  const s = q.toString();
  return s === '' ? path : `${path}?${s}`;
}

export function docLink(documentId: string, label: string): Html {
  return as(html`<a href="${localHref('/doc', { id: documentId })}">${label}</a>`);
}

export function duration(ms: number | undefined): string {
  if (ms === undefined) return '–';
  const s = Math.round(ms / 1000);
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.round(s / 60)}m`;
  if (s < 172_800) return `${(s / 3600).toFixed(1)}h`;
  return `${(s / 86_400).toFixed(1)}d`;
}

/**
 * A propagation lag; when clock skew was clamped to 0, a "clock skew" marker carries the raw
 * (negative) value in its title.
 */
export function lag(ms: number | undefined, skewMs: number | undefined): Html {
  if (skewMs === undefined) return as(html`${duration(ms)}`);
  return as(
    html`${duration(ms)} <span class="skew" data-skew-ms="${skewMs}" title="clock skew: raw lag -${duration(-skewMs)} (queryable before the change was observed); shown as 0">clock skew</span>`,
  );
}

export function when(iso: string | undefined): string {
  return iso === undefined || iso === '' ? '–' : iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

export interface LayoutOptions {
  readonly title: string;
  readonly active: 'sources' | 'review' | 'runs' | 'doc';
  readonly authenticated: boolean;
  readonly flash?: string;
}

/** The page frame: navigation, whether actions are enabled, a one-time message. */
export function layout(o: LayoutOptions, body: Html): Html {
  const nav = (key: LayoutOptions['active'], href: string, label: string) =>
    html`<a href="${href}" class="${o.active === key ? 'active' : ''}">${label}</a>`;
  return as(html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>${o.title} · ragfresh</title>
<link rel="stylesheet" href="/ui.css">
</head>
<body>
<header>
<strong>ragfresh</strong>
<nav>${nav('sources', '/', 'Sources')} ${nav('review', '/review', 'Review queue')} ${nav('runs', '/runs', 'Runs')}</nav>
<span class="mode">${o.authenticated ? 'actions enabled' : 'read-only (open the login URL printed at start to act)'}</span>
</header>
<main>
${o.flash === undefined ? '' : html`<p class="flash" role="status">${o.flash}</p>`}
<h1>${o.title}</h1>
${body}
</main>
</body>
</html>`);
}

export const CSS = `
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d232a;background:#fafafa}
header{display:flex;gap:1.5em;align-items:center;padding:.6em 1.2em;background:#1d2a3a;color:#fff}
header a{color:#cfe0ff;margin-right:1em;text-decoration:none}header a.active{color:#fff;font-weight:600;text-decoration:underline}
header .mode{margin-left:auto;font-size:12px;color:#cfd8e3}
main{padding:1em 1.5em;max-width:1400px}
h1{font-size:20px;margin:.2em 0 .6em}h2{font-size:17px;margin:1.4em 0 .4em}h3{font-size:15px;margin:1em 0 .3em}
table{border-collapse:collapse;margin:.4em 0 1em;background:#fff}
th,td{border:1px solid #d9dee4;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#eef1f5;font-weight:600}
.num{text-align:right;font-variant-numeric:tabular-nums}
.muted{color:#7a8591}.skew{color:#8a5a00;border-bottom:1px dotted;cursor:help;font-size:.85em}.ok{color:#1d7a38}.bad{color:#b3261e;font-weight:600}
.state-healthy{color:#1d7a38}.state-degraded{color:#a05a00}.state-quarantined{color:#b3261e;font-weight:600}.state-tombstoned{color:#555}
.flash{background:#fff6d6;border:1px solid #e3c766;padding:.5em .8em}
.card{background:#fff;border:1px solid #d9dee4;padding:.6em 1em;margin:.6em 0}
code,pre{font:12px/1.4 ui-monospace,monospace}
pre{white-space:pre-wrap;word-break:break-word;max-width:900px}
table.chunks td,table.history td{word-break:break-word}
.unsafe-url{background:#fdecea;padding:0 3px}
.charts{display:flex;flex-wrap:wrap;gap:1em}
.chart{background:#fff;border:1px solid #d9dee4}
.chart text{font:11px system-ui,sans-serif;fill:#444}
.diff{border-collapse:collapse;width:100%;table-layout:fixed}
.diff td{font:12px/1.4 ui-monospace,monospace;white-space:pre-wrap;word-break:break-word;border:0;border-bottom:1px solid #eee}
.diff col.ln{width:3.5em}.diff td.ln{color:#999;text-align:right}
.diff .del{background:#fde8e8}.diff .add{background:#e6f6ea}.diff .gap td{background:#f1f3f6;color:#777;text-align:center}
.diff del{background:#f7b9b9;text-decoration:none}.diff ins{background:#9fe0ae;text-decoration:none}
form.inline{display:inline}
button{font:inherit;padding:2px 10px;cursor:pointer}
button.approve{background:#e6f6ea;border:1px solid #1d7a38}button.reject{background:#fde8e8;border:1px solid #b3261e}
details>summary{cursor:pointer}
`;
