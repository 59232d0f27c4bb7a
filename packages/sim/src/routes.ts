/**
 * What each path of a host serves when no fault stands in front of it: pages and their
 * Markdown twins (render-cached), robots.txt, sitemaps (one plain, one gzipped), the Atom feed,
 * llms.txt, login and search pages, assets and the app-shell bundle, redirects and 404s.
 */
import { gzipSync } from 'node:zlib';
import { baseTime, type ContentGenerator, PRISTINE, type Site } from './content.js';
import { isDeletion, type Modifiers } from './faults.js';
import { RenderCache, type Reply, redirect, text, validated } from './http.js';
import {
  appBundleJs,
  articleHtml,
  atomFeed,
  llmsTxt,
  loginHtml,
  notFoundHtml,
  pageHtml,
  pageMarkdown,
  robotsTxt,
  SITE_CSS,
  SITE_JS,
  type SitemapEntry,
  searchHtml,
  sitemapIndexXml,
  urlsetXml,
} from './render.js';
import { type HostRuntime, type PathState, type PathStates, twinPath } from './state.js';

export interface SiteRoutesOptions {
  readonly gen: ContentGenerator;
  readonly states: PathStates;
  readonly markdownTwins: boolean;
  readonly cacheSize: number;
}

type Listed = { spec: Site['pages'][number]; lastmod: number };

export class SiteRoutes {
  readonly #gen: ContentGenerator;
  readonly #states: PathStates;
  readonly #markdownTwins: boolean;
  readonly #cache: RenderCache;
  readonly #twins: Map<number, Map<string, string>> = new Map();

  constructor(options: SiteRoutesOptions) {
    this.#gen = options.gen;
    this.#states = options.states;
    this.#markdownTwins = options.markdownTwins;
    this.#cache = new RenderCache(options.cacheSize);
  }

  get markdownTwins(): boolean {
    return this.#markdownTwins;
  }

  /** Indexes a host's twin paths; called once per host as it starts. */
  addHost(hostIndex: number): void {
    const map = new Map<string, string>();
    for (const p of this.#gen.site(hostIndex).pages) map.set(twinPath(p.path), p.path);
    this.#twins.set(hostIndex, map);
  }

  /** Page path a request path refers to (itself, or the page a twin belongs to). */
  pagePathOf(hostIndex: number, path: string): string | undefined {
    const site = this.#gen.site(hostIndex);
    if (site.byPath.has(path)) return path;
    if (this.#markdownTwins) return this.#twins.get(hostIndex)?.get(path);
    return undefined;
  }

  clearCache(): void {
    this.#cache.clear();
  }

  lastModified(hostIndex: number, pageIndex: number, st: PathState | undefined): number {
    return st?.contentModified ?? this.#gen.baseModified(hostIndex, pageIndex);
  }

  route(
    rt: HostRuntime,
    url: URL,
    pagePath: string | undefined,
    pageState: PathState | undefined,
    mods: Modifiers,
  ): Reply {
    const site = rt.site;
    const path = url.pathname;
    if (pagePath !== undefined && pageState !== undefined) {
      const spec = site.byPath.get(pagePath);
      if (spec !== undefined) {
        if (path === pagePath)
          return this.#pageReply(rt, spec.index, pagePath, pageState, mods.churn);
        return this.#twinReply(rt, spec.index, pagePath, pageState);
      }
    }
    switch (path) {
      case '/robots.txt':
        return text(200, robotsTxt(rt.robots, rt.origin), 'text/plain; charset=utf-8', true);
      case '/sitemap.xml':
        return this.#sitemapIndex(rt);
      // Sitemaps carry an ETag but no Last-Modified: a deletion changes them without moving
      // any lastmod forward, and If-Modified-Since would then hide it.
      case '/sitemaps/pages-1.xml':
        return text(
          200,
          urlsetXml(this.#sitemapEntries(rt, 0)),
          'application/xml; charset=utf-8',
          true,
        );
      case '/sitemaps/pages-2.xml.gz': {
        // A sitemap file that is itself gzip (no Content-Encoding), as many sites publish them.
        const body = gzipSync(Buffer.from(urlsetXml(this.#sitemapEntries(rt, 1)), 'utf8'));
        return validated(200, body, 'application/gzip', true);
      }
      case '/feed.xml':
        return text(200, this.#feed(rt), 'application/atom+xml; charset=utf-8', true);
      case '/llms.txt':
        if (!this.#markdownTwins) break;
        return text(200, this.#llms(rt), 'text/plain; charset=utf-8', true);
      case '/login':
        return text(
          200,
          loginHtml(site, url.searchParams.get('next') ?? '/'),
          'text/html; charset=utf-8',
          true,
        );
      case '/search':
        return text(
          200,
          searchHtml(site, url.searchParams.get('q') ?? ''),
          'text/html; charset=utf-8',
          true,
        );
      case '/assets/site.css':
        return text(200, SITE_CSS, 'text/css; charset=utf-8', true);
      case '/assets/site.js':
        return text(200, SITE_JS, 'text/javascript; charset=utf-8', true);
      case '/assets/app.js':
        return this.#bundle(rt, url);
    }
    // Like most doc sites: the other trailing-slash form of a page redirects to the page.
    const alternate = path.endsWith('/') ? path.slice(0, -1) : `${path}/`;
    if (alternate !== '/' && site.byPath.has(alternate)) {
      return redirect(301, rt.origin + alternate + url.search);
    }
    return text(404, notFoundHtml(site, 404), 'text/html; charset=utf-8', true);
  }

  #pageReply(
    rt: HostRuntime,
    pageIndex: number,
    pagePath: string,
    st: PathState,
    churn: boolean,
  ): Reply {
    const hostIndex = rt.site.index;
    const lastModified = this.lastModified(hostIndex, pageIndex, st);
    const render = (builtAt: number) =>
      pageHtml(rt.site, this.#gen.page(hostIndex, pageIndex, st.content), {
        canonical: rt.origin + pagePath,
        markdownPath: this.#markdownTwins ? twinPath(pagePath) : undefined,
        lastModified,
        builtAt,
      });
    const base = baseTime(this.#gen.seed);
    if (churn) {
      st.churned++;
      const body = Buffer.from(render(base + st.churned * 1000), 'utf8');
      return { ...validated(200, body, 'text/html; charset=utf-8', true), lastModified };
    }
    const c = this.#cache.get(`${hostIndex} ${pagePath} html ${st.stamp} ${st.churned}`, () =>
      render(base + st.churned * 1000),
    );
    return {
      status: 200,
      headers: { 'content-type': 'text/html; charset=utf-8' },
      body: c.body,
      etag: c.etag,
      lastModified,
      compressible: true,
      cacheEntry: c,
    };
  }

  #twinReply(rt: HostRuntime, pageIndex: number, pagePath: string, st: PathState): Reply {
    const hostIndex = rt.site.index;
    const c = this.#cache.get(`${hostIndex} ${pagePath} md ${st.stamp}`, () =>
      pageMarkdown(this.#gen.page(hostIndex, pageIndex, st.content)),
    );
    return {
      status: 200,
      headers: { 'content-type': 'text/markdown; charset=utf-8' },
      body: c.body,
      etag: c.etag,
      lastModified: this.lastModified(hostIndex, pageIndex, st),
      compressible: true,
      cacheEntry: c,
    };
  }

  /** Pages not deleted, with their lastmod: what sitemaps, the feed and llms.txt list. */
  #listed(rt: HostRuntime): Listed[] {
    const out: Listed[] = [];
    for (const spec of rt.site.pages) {
      const st = this.#states.peek(rt.site.index, spec.path);
      if (isDeletion(st?.fault)) continue;
      out.push({ spec, lastmod: this.lastModified(rt.site.index, spec.index, st) });
    }
    return out;
  }

  /** Pages split in two child sitemaps: the first half plain XML, the second gzipped. */
  #sitemapEntries(rt: HostRuntime, part: 0 | 1): SitemapEntry[] {
    const all = rt.site.pages;
    const half = Math.ceil(all.length / 2);
    const inPart = new Set(
      all.slice(part === 0 ? 0 : half, part === 0 ? half : all.length).map((p) => p.index),
    );
    return this.#listed(rt)
      .filter((e) => inPart.has(e.spec.index))
      .map((e) => ({ loc: rt.origin + e.spec.path, lastmod: e.lastmod }));
  }

  #sitemapIndex(rt: HostRuntime): Reply {
    const lastmods = [0, 1].map((part) =>
      this.#sitemapEntries(rt, part as 0 | 1).reduce(
        (max, e) => Math.max(max, e.lastmod),
        baseTime(this.#gen.seed) - 730 * 86_400_000,
      ),
    );
    const xml = sitemapIndexXml([
      { loc: `${rt.origin}/sitemaps/pages-1.xml`, lastmod: lastmods[0] as number },
      { loc: `${rt.origin}/sitemaps/pages-2.xml.gz`, lastmod: lastmods[1] as number },
    ]);
    return text(200, xml, 'application/xml; charset=utf-8', true);
  }

  /** The 20 most recently modified listed pages, newest first. */
  #feed(rt: HostRuntime): string {
    const recent = this.#listed(rt)
      .sort((a, b) => b.lastmod - a.lastmod || a.spec.index - b.spec.index)
      .slice(0, 20);
    return atomFeed(
      rt.site,
      rt.origin,
      recent.map((e) => ({
        url: rt.origin + e.spec.path,
        title: e.spec.title,
        summary: `${e.spec.title} in the ${rt.site.product} documentation.`,
        updated: e.lastmod,
      })),
    );
  }

  #llms(rt: HostRuntime): string {
    return llmsTxt(
      rt.site,
      rt.origin,
      this.#listed(rt)
        .filter((e) => e.spec.index !== 0)
        .map((e) => ({
          title: e.spec.title,
          url: rt.origin + twinPath(e.spec.path),
          section: e.spec.section,
        })),
    );
  }

  #bundle(rt: HostRuntime, url: URL): Reply {
    const target = url.searchParams.get('p') ?? '';
    const spec = rt.site.byPath.get(target);
    const render = url.searchParams.get('render') !== '0';
    if (spec === undefined)
      return text(404, '/* no such page */\n', 'text/javascript; charset=utf-8', true);
    const st = this.#states.peek(rt.site.index, target);
    const page = this.#gen.page(rt.site.index, spec.index, st?.content ?? PRISTINE);
    const js = appBundleJs(
      `${spec.title} — ${rt.site.title}`,
      render ? articleHtml(rt.site, page) : undefined,
    );
    return text(200, js, 'text/javascript; charset=utf-8', true);
  }
}
