// A loopback docs host whose pages carry chrome inside the article (a promo line, a newsletter
// box, a legal footer), where structural extraction cannot tell it from content,
// beside content every page shares on purpose (an install code block, a "Next steps" heading).
// Used by the engine's boilerplate tests and `pnpm bench:boilerplate`. Plain Node, no types
// beyond what Node strips.
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

const WORDS = (
  'alpha bravo cache delta engine fetch graph index journal kernel layer merge node ' +
  'option parse query route schema token update vector worker yield zone batch chunk ' +
  'cluster deploy epoch filter gateway header inventory lease manifest network policy ' +
  'replica shard stream tenant upload version window region quota secret backup'
).split(' ');

/** Deterministic pseudo-random words (a small LCG), so every run serves the same bytes. */
function words(seed: number, n: number): string {
  let x = (seed * 2654435761) >>> 0 || 1;
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    out.push(WORDS[(x >>> 8) % WORDS.length]!);
  }
  const s = out.join(' ');
  return `${s[0]!.toUpperCase()}${s.slice(1)}.`;
}

export interface ChromeSiteOptions {
  /** Pages on the host. Default 24. */
  readonly pages?: number;
  /** H2 sections per page. Default 4. */
  readonly sections?: number;
  /** Whether page i carries the chrome (promo, newsletter, legal footer). Default: every page. */
  readonly chrome?: (index: number) => boolean;
  /** Leave the h1 out (heading paths are then rooted at the page title). Default false. */
  readonly noH1?: boolean;
}

export interface ChromeSite {
  readonly origin: string;
  readonly urls: readonly string[];
  /** Replaces the legal footer line of every page (a chrome change). */
  setFooter(text: string): void;
  /** Appends a sentence to one page's first section (a content change). */
  editPage(index: number, text: string): void;
  /** Adds a banner paragraph at the top of the pages `on` selects (a chrome change on some pages). */
  setBanner(text: string, on: (index: number) => boolean): void;
  /** Requests answered 200 / 304 so far. */
  readonly served: { ok: number; notModified: number };
  stop(): Promise<void>;
}

export const PROMO = 'New: Acme Cloud now runs in three more regions. Start a free trial today.';
export const NEWSLETTER = 'Subscribe to the Acme newsletter for monthly product updates and tips.';
export const FIRST_FOOTER = 'Copyright 2026 Acme Cloud Inc. All rights reserved. Made in Lisbon.';
export const INSTALL = 'npm install @acme/cloud-cli';

function topic(i: number): string {
  return i === 0 ? 'Overview' : `${words(i * 7919, 2).replace('.', '')} guide ${i}`;
}

interface PageLook {
  readonly sections: number;
  readonly footer: string;
  readonly chrome: boolean;
  readonly h1: boolean;
  readonly banner: string | undefined;
}

function pageHtml(i: number, look: PageLook, edits: readonly string[]): string {
  const { sections, footer, chrome } = look;
  const body: string[] = [];
  if (look.h1) body.push(`<h1>${topic(i)}</h1>`);
  if (look.banner !== undefined) body.push(`<p class="notice">${look.banner}</p>`);
  if (chrome) body.push(`<p class="promo">${PROMO}</p>`);
  body.push(`<p>${words(i * 31 + 1, 40)} ${words(i * 31 + 2, 30)}</p>`);
  body.push(`<pre><code class="language-sh">${INSTALL}\n</code></pre>`);
  for (let s = 0; s < sections; s++) {
    body.push(`<h2>Section ${s + 1}: ${words(i * 101 + s, 3).replace('.', '')}</h2>`);
    const extra = s === 0 && edits.length > 0 ? ` ${edits.join(' ')}` : '';
    body.push(`<p>${words(i * 977 + s * 13, 60)}${extra}</p>`);
    body.push(`<p>${words(i * 977 + s * 13 + 5, 50)}</p>`);
  }
  body.push('<h2>Next steps</h2>', `<p>${words(i * 4001, 35)}</p>`);
  if (chrome) {
    body.push(`<div class="newsletter"><p>${NEWSLETTER}</p></div>`);
    body.push(`<div class="legal"><p>${footer}</p></div>`);
  }
  return [
    '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
    `<title>${topic(i)} | Guides | Acme Cloud</title></head><body>`,
    '<header><nav><a href="/">Home</a> <a href="/p/1">Guides</a></nav></header>',
    `<main><article>${body.join('\n')}</article></main>`,
    '<footer><p>Status: all systems normal</p></footer>',
    '</body></html>',
  ].join('\n');
}

/** Starts the host on an ephemeral loopback port. */
export async function startChromeSite(options: ChromeSiteOptions = {}): Promise<ChromeSite> {
  const pages = options.pages ?? 24;
  const sections = options.sections ?? 4;
  let footer = FIRST_FOOTER;
  let banner: { text: string; on: (index: number) => boolean } | undefined;
  const edits = new Map<number, string[]>();
  const served = { ok: 0, notModified: 0 };
  const server: Server = createServer((req, res) => {
    const m = /^\/p\/(\d+)$/.exec(req.url ?? '');
    const i = m === null ? -1 : Number(m[1]);
    if (i < 0 || i >= pages) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    const look: PageLook = {
      sections,
      footer,
      chrome: options.chrome?.(i) ?? true,
      h1: options.noH1 !== true,
      banner: banner?.on(i) === true ? banner.text : undefined,
    };
    const html = pageHtml(i, look, edits.get(i) ?? []);
    const etag = `"${createHash('sha256').update(html).digest('hex').slice(0, 16)}"`;
    if (req.headers['if-none-match'] === etag) {
      served.notModified++;
      res.writeHead(304, { etag }).end();
      return;
    }
    served.ok++;
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', etag }).end(html);
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    urls: Array.from({ length: pages }, (_, i) => `${origin}/p/${i}`),
    setFooter(text) {
      footer = text;
    },
    editPage(index, text) {
      edits.set(index, [...(edits.get(index) ?? []), text]);
    },
    setBanner(text, on) {
      banner = { text, on };
    },
    served,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
