/**
 * The simulated web: one node:http server per virtual host on 127.0.0.1, so anything keyed by
 * origin (per-host politeness, robots caches, connection pools) sees distinct hosts.
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { gzipSync } from 'node:zlib';
import { RagfreshError } from '@ragfresh/core';
import { gzipBomb } from './bomb.js';
import {
  baseTime,
  ContentGenerator,
  type ContentState,
  MAX_TOTAL_PAGES,
  PRISTINE,
  type Site,
} from './content.js';
import {
  appBundleJs,
  appShellHtml,
  articleHtml,
  atomFeed,
  challengeHtml,
  consentWallHtml,
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
  soft404Html,
  urlsetXml,
} from './render.js';
import type {
  CharsetVariant,
  MutationKind,
  MutationOptions,
  PageFacts,
  RequestLogEntry,
  RobotsSpec,
  ScheduledMutation,
  SimHostInfo,
  SimWebOptions,
} from './types.js';

/** The running simulated web. Every method is synchronous except `stop`. */
export interface SimWeb extends AsyncDisposable {
  readonly seed: number;
  /** Host names in order: `docs-0`, `docs-1`, ... */
  hosts(): string[];
  /** `http://127.0.0.1:<port>` of a host (name, or any URL on it). */
  origin(host: string): string;
  hostInfo(host: string): SimHostInfo;
  /** Host name of a sim URL. Throws INVALID_ARGUMENT for URLs the sim does not serve. */
  hostOf(url: string): string;
  /** Canonical page URLs (HTML), all hosts in order, or one host's. Home pages included. */
  urls(host?: string): string[];
  /** Markdown twin URL of a page URL. */
  markdownUrl(url: string): string;
  /** Current facts (unique phrases, headings) of a page; tracking parameters are ignored. */
  pageFacts(url: string): PageFacts;
  /**
   * The page's current article as Markdown, exactly what its twin serves: the ground truth an
   * extractor's output can be compared with (no nav, banner, sidebar or footer).
   */
  markdown(url: string): string;
  /** Changes how one URL (a page, its twin, robots.txt, a sitemap...) is served from now on. */
  mutate(url: string, kind: MutationKind, opts?: MutationOptions): void;
  /** A fault or modifier for every path of a host (outage, rateLimit, challenge, slow...). */
  mutateHost(host: string, kind: MutationKind, opts?: MutationOptions): void;
  /** Queues mutations for a logical tick (`advance`) or after N requests to a path. */
  schedule(steps: readonly ScheduledMutation[]): void;
  /** Moves the logical clock forward and applies mutations now due. Returns the new tick. */
  advance(ticks?: number): number;
  /** Current logical tick (starts at 0). */
  tick(): number;
  /** Simulated time: the sim epoch + 1 h per tick + 1 s per content mutation. */
  now(): Date;
  /** Replaces a host's robots.txt. */
  setRobots(host: string, spec: RobotsSpec): void;
  /** Requests seen so far (copies), optionally only one host's. */
  log(host?: string): RequestLogEntry[];
  clearLog(): void;
  /** Undoes every mutation and schedule, clears the log and resets the clock. */
  reset(): void;
  /** Closes every listener and open connection. */
  stop(): Promise<void>;
}

interface Fault {
  readonly kind: MutationKind;
  readonly opts: MutationOptions;
  remaining: number | undefined;
}

interface Modifiers {
  churn: boolean;
  slow: MutationOptions | undefined;
  charset: CharsetVariant | undefined;
}

interface PathState {
  content: ContentState;
  contentModified: number | undefined;
  /** Bumped on every content change; part of the render cache key. */
  stamp: number;
  fault: Fault | undefined;
  mods: Modifiers;
  served: number;
  churned: number;
}

interface HostRuntime {
  readonly site: Site;
  readonly server: Server;
  readonly port: number;
  readonly origin: string;
  inFlight: number;
  robots: RobotsSpec;
  fault: Fault | undefined;
  mods: Modifiers;
}

interface MutableLogEntry {
  seq: number;
  time: number;
  endTime: number | undefined;
  host: string;
  origin: string;
  method: string;
  path: string;
  url: string;
  headers: Record<string, string>;
  status: number;
  concurrent: number;
  connection: number;
  bytes: number;
  encoding: string | undefined;
}

interface Reply {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  /** Validators: the reply may become a 304. */
  etag?: string;
  lastModified?: number;
  /** gzip when the client accepts it. */
  compressible: boolean;
  /** Render-cache entry of `body`, where its gzip is kept once computed. */
  cacheEntry?: CachedBody;
}

interface CachedBody {
  body: Buffer;
  etag: string;
  gz: Buffer | undefined;
}

const FAULT_KINDS: ReadonlySet<MutationKind> = new Set<MutationKind>([
  'delete404',
  'delete410',
  'outage',
  'rateLimit',
  'consentWall',
  'challenge',
  'loginRedirect',
  'offHostRedirect',
  'soft404',
  'appShell',
  'gzipBomb',
]);
const CONTENT_KINDS: ReadonlySet<MutationKind> = new Set<MutationKind>(['edit', 'shrink']);
const ALL_KINDS: ReadonlySet<MutationKind> = new Set<MutationKind>([
  ...FAULT_KINDS,
  ...CONTENT_KINDS,
  'timestampChurn',
  'slow',
  'wrongCharset',
  'restore',
]);
const HOUR = 3_600_000;
const CHARSET_VARIANTS: readonly CharsetVariant[] = [
  'header',
  'meta-only',
  'latin1',
  'latin1-meta-only',
];

function invalid(message: string, details?: Record<string, unknown>): RagfreshError {
  return new RagfreshError('INVALID_ARGUMENT', message, {
    scope: 'sim',
    ...(details === undefined ? {} : { details }),
  });
}

function noMods(): Modifiers {
  return { churn: false, slow: undefined, charset: undefined };
}

function strongEtag(body: Buffer): string {
  return `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
}

function httpDate(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toUTCString();
}

function acceptsGzip(header: string | undefined): boolean {
  if (header === undefined) return false;
  for (const part of header.split(',')) {
    const [coding, ...params] = part.trim().toLowerCase().split(';');
    if (coding !== 'gzip' && coding !== 'x-gzip' && coding !== '*') continue;
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    if (q === undefined || Number(q.slice(2)) > 0) return true;
  }
  return false;
}

/** Weak comparison, as RFC 9110 requires for If-None-Match. */
function etagMatches(header: string, etag: string): boolean {
  if (header.trim() === '*') return true;
  const bare = etag.replace(/^W\//, '');
  return header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === bare);
}

/** Path the twin of a page is served at: `/a/b` -> `/a/b.md`, `/a/` -> `/a/index.md`. */
export function twinPath(path: string): string {
  return path.endsWith('/') ? `${path}index.md` : `${path}.md`;
}

class SimWebImpl implements SimWeb {
  readonly seed: number;
  private readonly gen: ContentGenerator;
  private readonly runtimes: HostRuntime[] = [];
  private readonly byName = new Map<string, HostRuntime>();
  private readonly byPort = new Map<number, HostRuntime>();
  private readonly states = new Map<string, PathState>();
  private readonly twins: ReadonlyArray<Map<string, string>>;
  private readonly cache = new Map<string, CachedBody>();
  private pending: ScheduledMutation[] = [];
  private entries: MutableLogEntry[] = [];
  private seq = 0;
  private clock = 0;
  private mutations = 0;
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly connectionIds = new WeakMap<Socket, number>();
  private connections = 0;
  private stopped = false;
  private readonly markdownTwins: boolean;
  private readonly logLimit: number;
  private readonly cacheSize: number;
  private readonly robotsOption: SimWebOptions['robots'];

  constructor(options: SimWebOptions, gen: ContentGenerator, hostCount: number) {
    this.seed = gen.seed;
    this.gen = gen;
    this.markdownTwins = options.markdownTwins ?? true;
    this.logLimit = options.logLimit ?? 100_000;
    this.cacheSize = options.cacheSize ?? 5_000;
    this.robotsOption = options.robots;
    const twins: Map<string, string>[] = [];
    for (let i = 0; i < hostCount; i++) {
      const map = new Map<string, string>();
      for (const p of gen.site(i).pages) map.set(twinPath(p.path), p.path);
      twins.push(map);
    }
    this.twins = twins;
  }

  async listen(hostCount: number, basePort: number): Promise<void> {
    try {
      for (let i = 0; i < hostCount; i++) {
        const site = this.gen.site(i);
        const server = createServer((req, res) => this.handle(i, req, res));
        server.on('connection', (socket) => {
          this.connectionIds.set(socket, ++this.connections);
        });
        // Longer than any client keeps an idle socket (undici: the server hint minus 2 s, or 4 s):
        // with 5 s, a client under CPU load reused a socket the server was closing at that
        // moment and got ECONNRESET (the flaky langchain indexing test, issue 20).
        server.keepAliveTimeout = 60_000;
        await new Promise<void>((resolve, reject) => {
          server.once('error', reject);
          server.listen(basePort === 0 ? 0 : basePort + i, '127.0.0.1', () => {
            server.off('error', reject);
            resolve();
          });
        });
        const port = (server.address() as AddressInfo).port;
        const runtime: HostRuntime = {
          site,
          server,
          port,
          origin: `http://127.0.0.1:${port}`,
          inFlight: 0,
          robots: this.defaultRobots(site.name, i),
          fault: undefined,
          mods: noMods(),
        };
        this.runtimes.push(runtime);
        this.byName.set(site.name, runtime);
        this.byPort.set(port, runtime);
      }
    } catch (err) {
      await this.stop();
      throw new RagfreshError(
        'INVALID_CONFIG',
        `could not listen on 127.0.0.1${basePort === 0 ? '' : ` port ${basePort}+`}: ${(err as Error).message}; pick another port or use port 0`,
        { scope: 'sim', cause: err },
      );
    }
  }

  private defaultRobots(name: string, index: number): RobotsSpec {
    const option = this.robotsOption;
    if (typeof option === 'function') return option(name, index);
    if (option !== undefined) return option;
    return { disallow: ['/search', '/login'], allow: ['/'] };
  }

  // ---- lookup -------------------------------------------------------------------------------

  private runtime(host: string): HostRuntime {
    const byName = this.byName.get(host);
    if (byName !== undefined) return byName;
    if (host.includes('://')) return this.locate(host).rt;
    throw invalid(`unknown sim host "${host}"; use one of ${this.hosts().slice(0, 5).join(', ')}`);
  }

  private locate(url: string): { rt: HostRuntime; path: string; query: string } {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw invalid(`not a URL: "${url}"; pass an absolute URL from sim.urls()`);
    }
    const rt = parsed.hostname === '127.0.0.1' ? this.byPort.get(Number(parsed.port)) : undefined;
    if (rt === undefined)
      throw invalid(`"${url}" is not served by this sim; pass a URL from sim.urls()`);
    return { rt, path: parsed.pathname, query: parsed.search };
  }

  /** Page path a request path refers to (itself, or the page a twin belongs to). */
  private pagePathOf(hostIndex: number, path: string): string | undefined {
    const site = this.gen.site(hostIndex);
    if (site.byPath.has(path)) return path;
    if (this.markdownTwins) return this.twins[hostIndex]?.get(path);
    return undefined;
  }

  private state(hostIndex: number, path: string): PathState {
    const key = `${hostIndex} ${path}`;
    let s = this.states.get(key);
    if (s === undefined) {
      s = {
        content: PRISTINE,
        contentModified: undefined,
        stamp: 0,
        fault: undefined,
        mods: noMods(),
        served: 0,
        churned: 0,
      };
      this.states.set(key, s);
    }
    return s;
  }

  private peekState(hostIndex: number, path: string): PathState | undefined {
    return this.states.get(`${hostIndex} ${path}`);
  }

  hosts(): string[] {
    return this.runtimes.map((r) => r.site.name);
  }

  origin(host: string): string {
    return this.runtime(host).origin;
  }

  hostInfo(host: string): SimHostInfo {
    const rt = this.runtime(host);
    return {
      name: rt.site.name,
      index: rt.site.index,
      origin: rt.origin,
      port: rt.port,
      flavor: rt.site.flavor,
      siteTitle: rt.site.title,
      domain: rt.site.domain.name,
    };
  }

  hostOf(url: string): string {
    return this.locate(url).rt.site.name;
  }

  urls(host?: string): string[] {
    const rts = host === undefined ? this.runtimes : [this.runtime(host)];
    return rts.flatMap((rt) => rt.site.pages.map((p) => rt.origin + p.path));
  }

  markdownUrl(url: string): string {
    const { rt, path } = this.locate(url);
    if (!rt.site.byPath.has(path))
      throw invalid(`"${url}" is not a page URL; pass one from sim.urls()`);
    return rt.origin + twinPath(path);
  }

  markdown(url: string): string {
    const { rt, path } = this.locate(url);
    const pagePath = this.pagePathOf(rt.site.index, path);
    const spec = pagePath === undefined ? undefined : rt.site.byPath.get(pagePath);
    if (spec === undefined || pagePath === undefined) {
      throw invalid(`"${url}" is not a page URL; pass one from sim.urls()`);
    }
    const st = this.peekState(rt.site.index, pagePath);
    return pageMarkdown(this.gen.page(rt.site.index, spec.index, st?.content ?? PRISTINE));
  }

  pageFacts(url: string): PageFacts {
    const { rt, path } = this.locate(url);
    const pagePath = this.pagePathOf(rt.site.index, path);
    const spec = pagePath === undefined ? undefined : rt.site.byPath.get(pagePath);
    if (spec === undefined || pagePath === undefined) {
      throw invalid(`"${url}" is not a page URL; pass one from sim.urls()`);
    }
    const st = this.peekState(rt.site.index, pagePath);
    const page = this.gen.page(rt.site.index, spec.index, st?.content ?? PRISTINE);
    return {
      url: rt.origin + pagePath,
      host: rt.site.name,
      path: pagePath,
      title: spec.title,
      phrase: page.phrase,
      sections: page.sections.map((s) => ({
        heading: s.heading,
        anchor: s.anchor,
        level: s.level,
        phrase: s.phrase,
      })),
      revision: st?.content.revision ?? 0,
      lastModified: new Date(st?.contentModified ?? page.baseModified).toISOString(),
      markdownUrl: this.markdownTwins ? rt.origin + twinPath(pagePath) : undefined,
    };
  }

  // ---- mutations ----------------------------------------------------------------------------

  tick(): number {
    return this.clock;
  }

  now(): Date {
    return new Date(baseTime(this.seed) + this.clock * HOUR + this.mutations * 1000);
  }

  mutate(url: string, kind: MutationKind, opts: MutationOptions = {}): void {
    const { rt, path } = this.locate(url);
    this.apply(rt, path, kind, opts);
  }

  private apply(rt: HostRuntime, path: string, kind: MutationKind, opts: MutationOptions): void {
    checkKind(kind, opts);
    const hostIndex = rt.site.index;
    if (CONTENT_KINDS.has(kind) || (kind === 'restore' && opts.content === true)) {
      const pagePath = this.pagePathOf(hostIndex, path);
      if (pagePath === undefined) {
        if (kind === 'restore')
          throw invalid(`restore {content: true} needs a page URL, got ${rt.origin}${path}`);
        throw invalid(
          `${kind} needs a page URL, got ${rt.origin}${path}; pass one from sim.urls()`,
        );
      }
      this.applyContent(hostIndex, pagePath, kind, opts);
      if (kind !== 'restore') return;
    }
    const st = this.state(hostIndex, path);
    applyServing(st, kind, opts);
  }

  private applyContent(
    hostIndex: number,
    pagePath: string,
    kind: MutationKind,
    opts: MutationOptions,
  ): void {
    const st = this.state(hostIndex, pagePath);
    const site = this.gen.site(hostIndex);
    const spec = site.byPath.get(pagePath);
    if (spec === undefined) return;
    const c = st.content;
    if (kind === 'edit') {
      const page = this.gen.page(hostIndex, spec.index, c);
      const section = opts.section ?? 0;
      if (!Number.isInteger(section) || section < 0 || section >= page.sections.length) {
        throw invalid(
          `edit: section ${section} does not exist; the page has ${page.sections.length} sections now`,
        );
      }
      const revision = c.revision + 1;
      const edited = new Map(c.edited).set(section, revision);
      const appended = new Map(c.appended);
      if (opts.text !== undefined) appended.set(section, opts.text);
      st.content = { revision, edited, appended, keepSections: c.keepSections };
    } else if (kind === 'shrink') {
      const keep = opts.keepSections ?? 1;
      if (!Number.isInteger(keep) || keep < 0)
        throw invalid(`shrink: keepSections must be an integer >= 0, got ${keep}`);
      st.content = { ...c, revision: c.revision + 1, keepSections: keep };
    } else {
      if (c.edited.size === 0 && c.keepSections === undefined) return;
      // The revision keeps counting, so an edit after a restore is new text, never an old one.
      st.content = {
        revision: c.revision + 1,
        edited: new Map(),
        appended: new Map(),
        keepSections: undefined,
      };
    }
    // Each content change moves simulated time on by a second, so Last-Modified always grows.
    this.mutations++;
    st.contentModified = this.now().getTime();
    st.stamp++;
  }

  mutateHost(host: string, kind: MutationKind, opts: MutationOptions = {}): void {
    checkKind(kind, opts);
    if (CONTENT_KINDS.has(kind))
      throw invalid(`${kind} applies to one page; use mutate(url, '${kind}')`);
    applyServing(this.runtime(host), kind, opts);
  }

  schedule(steps: readonly ScheduledMutation[]): void {
    for (const step of steps) {
      checkKind(step.kind, step.opts ?? {});
      this.locate(step.url);
      if ((step.atTick === undefined) === (step.afterRequests === undefined)) {
        throw invalid(
          `schedule: give exactly one of atTick or afterRequests for ${step.kind} on ${step.url}`,
        );
      }
    }
    this.pending.push(...steps);
    this.applyDue();
  }

  advance(ticks = 1): number {
    if (!Number.isInteger(ticks) || ticks < 0)
      throw invalid(`advance: ticks must be an integer >= 0, got ${ticks}`);
    this.clock += ticks;
    this.applyDue();
    return this.clock;
  }

  /** Applies due mutations in the order they were scheduled. */
  private applyDue(rtFilter?: HostRuntime, pathFilter?: string): void {
    if (this.pending.length === 0) return;
    const keep: ScheduledMutation[] = [];
    const due: ScheduledMutation[] = [];
    for (const step of this.pending) {
      const { rt, path } = this.locate(step.url);
      let isDue = false;
      if (step.atTick !== undefined) isDue = step.atTick <= this.clock;
      else if (
        step.afterRequests !== undefined &&
        (rtFilter === undefined || (rt === rtFilter && path === pathFilter))
      ) {
        isDue = (this.peekState(rt.site.index, path)?.served ?? 0) >= step.afterRequests;
      }
      (isDue ? due : keep).push(step);
    }
    this.pending = keep;
    for (const step of due) this.mutate(step.url, step.kind, step.opts ?? {});
  }

  setRobots(host: string, spec: RobotsSpec): void {
    this.runtime(host).robots = spec;
  }

  log(host?: string): RequestLogEntry[] {
    const name = host === undefined ? undefined : this.runtime(host).site.name;
    return this.entries
      .filter((e) => name === undefined || e.host === name)
      .map((e) => Object.freeze({ ...e, headers: Object.freeze({ ...e.headers }) }));
  }

  clearLog(): void {
    this.entries = [];
  }

  reset(): void {
    this.states.clear();
    this.cache.clear();
    this.pending = [];
    this.entries = [];
    this.clock = 0;
    this.mutations = 0;
    for (const rt of this.runtimes) {
      rt.fault = undefined;
      rt.mods = noMods();
      rt.robots = this.defaultRobots(rt.site.name, rt.site.index);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    await Promise.all(
      this.runtimes.map(
        (rt) =>
          new Promise<void>((resolve) => {
            rt.server.close(() => resolve());
            rt.server.closeAllConnections();
          }),
      ),
    );
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  // ---- serving ------------------------------------------------------------------------------

  private handle(hostIndex: number, req: IncomingMessage, res: ServerResponse): void {
    const rt = this.runtimes[hostIndex];
    if (rt === undefined) {
      res.statusCode = 503;
      res.end();
      return;
    }
    const rawPath = req.url ?? '/';
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
    }
    rt.inFlight++;
    const entry: MutableLogEntry = {
      seq: ++this.seq,
      time: performance.timeOrigin + performance.now(),
      endTime: undefined,
      host: rt.site.name,
      origin: rt.origin,
      method: req.method ?? 'GET',
      path: rawPath,
      url: rt.origin + rawPath,
      headers,
      status: 0,
      concurrent: rt.inFlight,
      connection: this.connectionIds.get(req.socket) ?? 0,
      bytes: 0,
      encoding: undefined,
    };
    this.entries.push(entry);
    if (this.entries.length > this.logLimit + 1024)
      this.entries.splice(0, this.entries.length - this.logLimit);
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      rt.inFlight--;
      entry.endTime = performance.timeOrigin + performance.now();
    };
    res.on('finish', finish);
    res.on('close', finish);
    req.resume();
    this.serve(rt, req, res, entry).catch((err: unknown) => {
      if (!res.headersSent) {
        res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
        entry.status = 500;
      }
      res.end(`sim error: ${(err as Error).message}\n`);
    });
  }

  private async serve(
    rt: HostRuntime,
    req: IncomingMessage,
    res: ServerResponse,
    entry: MutableLogEntry,
  ): Promise<void> {
    const hostIndex = rt.site.index;
    // Concatenate rather than resolve, so a request target like `//x` stays a path on this host.
    const target = req.url ?? '/';
    const url = new URL(target.startsWith('/') ? rt.origin + target : target, rt.origin);
    const path = url.pathname;
    const method = req.method ?? 'GET';
    this.applyDue(rt, path);
    const st = this.state(hostIndex, path);
    const pagePath = this.pagePathOf(hostIndex, path);
    const pageState = pagePath === undefined ? undefined : this.state(hostIndex, pagePath);

    let reply: Reply;
    const mods = mergeMods(rt.mods, st.mods);
    if (method !== 'GET' && method !== 'HEAD') {
      reply = text(405, 'Method not allowed\n', 'text/plain; charset=utf-8');
      reply.headers.allow = 'GET, HEAD';
    } else {
      // Host-wide faults first (the whole server misbehaves), then the path's own, then the
      // page's deletion when a twin is requested.
      let fault = takeFault(rt) ?? takeFault(st);
      if (fault === undefined && pageState !== undefined && pageState !== st) {
        const pf = pageState.fault;
        if (pf !== undefined && (pf.kind === 'delete404' || pf.kind === 'delete410')) fault = pf;
      }
      reply =
        fault === undefined
          ? this.route(rt, url, pagePath, pageState, mods)
          : await this.faultReply(rt, url, fault, pagePath);
    }
    st.served++;
    if (mods.charset !== undefined && reply.headers['content-type']?.startsWith('text/html')) {
      reply = withCharset(reply, mods.charset);
    }
    this.send(req, res, reply, mods.slow, entry);
  }

  private route(
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
          return this.pageReply(rt, spec.index, pagePath, pageState, mods.churn);
        return this.twinReply(rt, spec.index, pagePath, pageState);
      }
    }
    switch (path) {
      case '/robots.txt':
        return text(200, robotsTxt(rt.robots, rt.origin), 'text/plain; charset=utf-8', true);
      case '/sitemap.xml':
        return this.sitemapIndex(rt);
      // Sitemaps carry an ETag but no Last-Modified: a deletion changes them without moving
      // any lastmod forward, and If-Modified-Since would then hide it.
      case '/sitemaps/pages-1.xml':
        return text(
          200,
          urlsetXml(this.sitemapEntries(rt, 0)),
          'application/xml; charset=utf-8',
          true,
        );
      case '/sitemaps/pages-2.xml.gz': {
        // A sitemap file that is itself gzip (no Content-Encoding), as many sites publish them.
        const body = gzipSync(Buffer.from(urlsetXml(this.sitemapEntries(rt, 1)), 'utf8'));
        return validated(200, body, 'application/gzip', true);
      }
      case '/feed.xml':
        return text(200, this.feed(rt), 'application/atom+xml; charset=utf-8', true);
      case '/llms.txt':
        if (!this.markdownTwins) break;
        return text(200, this.llms(rt), 'text/plain; charset=utf-8', true);
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
        return this.bundle(rt, url);
    }
    // Like most doc sites: the other trailing-slash form of a page redirects to the page.
    const alternate = path.endsWith('/') ? path.slice(0, -1) : `${path}/`;
    if (alternate !== '/' && site.byPath.has(alternate)) {
      return redirect(301, rt.origin + alternate + url.search);
    }
    return text(404, notFoundHtml(site, 404), 'text/html; charset=utf-8', true);
  }

  private lastModified(hostIndex: number, pageIndex: number, st: PathState | undefined): number {
    return st?.contentModified ?? this.gen.baseModified(hostIndex, pageIndex);
  }

  private cached(key: string, render: () => string): CachedBody {
    const hit = this.cache.get(key);
    if (hit !== undefined) {
      this.cache.delete(key);
      this.cache.set(key, hit);
      return hit;
    }
    const body = Buffer.from(render(), 'utf8');
    const entry: CachedBody = { body, etag: strongEtag(body), gz: undefined };
    this.cache.set(key, entry);
    if (this.cache.size > this.cacheSize) {
      const oldest = this.cache.keys().next().value;
      if (oldest !== undefined) this.cache.delete(oldest);
    }
    return entry;
  }

  private pageReply(
    rt: HostRuntime,
    pageIndex: number,
    pagePath: string,
    st: PathState,
    churn: boolean,
  ): Reply {
    const hostIndex = rt.site.index;
    const lastModified = this.lastModified(hostIndex, pageIndex, st);
    const render = (builtAt: number) =>
      pageHtml(rt.site, this.gen.page(hostIndex, pageIndex, st.content), {
        canonical: rt.origin + pagePath,
        markdownPath: this.markdownTwins ? twinPath(pagePath) : undefined,
        lastModified,
        builtAt,
      });
    const base = baseTime(this.seed);
    if (churn) {
      st.churned++;
      const body = Buffer.from(render(base + st.churned * 1000), 'utf8');
      return { ...validated(200, body, 'text/html; charset=utf-8', true), lastModified };
    }
    const c = this.cached(`${hostIndex} ${pagePath} html ${st.stamp} ${st.churned}`, () =>
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

  private twinReply(rt: HostRuntime, pageIndex: number, pagePath: string, st: PathState): Reply {
    const hostIndex = rt.site.index;
    const c = this.cached(`${hostIndex} ${pagePath} md ${st.stamp}`, () =>
      pageMarkdown(this.gen.page(hostIndex, pageIndex, st.content)),
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

  private listed(rt: HostRuntime): { spec: Site['pages'][number]; lastmod: number }[] {
    const out: { spec: Site['pages'][number]; lastmod: number }[] = [];
    for (const spec of rt.site.pages) {
      const st = this.peekState(rt.site.index, spec.path);
      const kind = st?.fault?.kind;
      if (kind === 'delete404' || kind === 'delete410') continue;
      out.push({ spec, lastmod: this.lastModified(rt.site.index, spec.index, st) });
    }
    return out;
  }

  /** Pages split in two child sitemaps: the first half plain XML, the second gzipped. */
  private sitemapEntries(rt: HostRuntime, part: 0 | 1): SitemapEntry[] {
    const all = rt.site.pages;
    const half = Math.ceil(all.length / 2);
    const inPart = new Set(
      all.slice(part === 0 ? 0 : half, part === 0 ? half : all.length).map((p) => p.index),
    );
    return this.listed(rt)
      .filter((e) => inPart.has(e.spec.index))
      .map((e) => ({ loc: rt.origin + e.spec.path, lastmod: e.lastmod }));
  }

  private sitemapIndex(rt: HostRuntime): Reply {
    const lastmods = [0, 1].map((part) =>
      this.sitemapEntries(rt, part as 0 | 1).reduce(
        (max, e) => Math.max(max, e.lastmod),
        baseTime(this.seed) - 730 * 86_400_000,
      ),
    );
    const xml = sitemapIndexXml([
      { loc: `${rt.origin}/sitemaps/pages-1.xml`, lastmod: lastmods[0] as number },
      { loc: `${rt.origin}/sitemaps/pages-2.xml.gz`, lastmod: lastmods[1] as number },
    ]);
    return text(200, xml, 'application/xml; charset=utf-8', true);
  }

  /** The 20 most recently modified listed pages, newest first. */
  private feed(rt: HostRuntime): string {
    const recent = this.listed(rt)
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

  private llms(rt: HostRuntime): string {
    return llmsTxt(
      rt.site,
      rt.origin,
      this.listed(rt)
        .filter((e) => e.spec.index !== 0)
        .map((e) => ({
          title: e.spec.title,
          url: rt.origin + twinPath(e.spec.path),
          section: e.spec.section,
        })),
    );
  }

  private bundle(rt: HostRuntime, url: URL): Reply {
    const target = url.searchParams.get('p') ?? '';
    const spec = rt.site.byPath.get(target);
    const render = url.searchParams.get('render') !== '0';
    if (spec === undefined)
      return text(404, '/* no such page */\n', 'text/javascript; charset=utf-8', true);
    const st = this.peekState(rt.site.index, target);
    const page = this.gen.page(rt.site.index, spec.index, st?.content ?? PRISTINE);
    const js = appBundleJs(
      `${spec.title} — ${rt.site.title}`,
      render ? articleHtml(rt.site, page) : undefined,
    );
    return text(200, js, 'text/javascript; charset=utf-8', true);
  }

  private async faultReply(
    rt: HostRuntime,
    url: URL,
    fault: Fault,
    pagePath: string | undefined,
  ): Promise<Reply> {
    const site = rt.site;
    const html = 'text/html; charset=utf-8';
    const o = fault.opts;
    switch (fault.kind) {
      case 'delete404':
        return text(404, notFoundHtml(site, 404), html, true);
      case 'delete410':
        return text(410, notFoundHtml(site, 410), html, true);
      case 'outage': {
        const r = text(
          503,
          '<!DOCTYPE html>\n<html><head><title>503 Service Unavailable</title></head><body><h1>Service Unavailable</h1><p>The server is temporarily unable to handle the request.</p></body></html>\n',
          html,
          false,
        );
        const after = o.retryAfter === undefined ? 120 : o.retryAfter;
        if (after !== null) r.headers['retry-after'] = String(after);
        r.headers['cache-control'] = 'no-store';
        return r;
      }
      case 'rateLimit': {
        const r = text(
          429,
          '<!DOCTYPE html>\n<html><head><title>429 Too Many Requests</title></head><body><h1>Too Many Requests</h1><p>Slow down.</p></body></html>\n',
          html,
          false,
        );
        const after = o.retryAfter === undefined ? 30 : o.retryAfter;
        if (after !== null) r.headers['retry-after'] = String(after);
        r.headers['cache-control'] = 'no-store';
        return r;
      }
      case 'consentWall':
        return text(200, consentWallHtml(site), html, true);
      case 'challenge': {
        const r = text(o.status ?? 200, challengeHtml(), html, false);
        r.headers['cf-mitigated'] = 'challenge';
        r.headers.server = 'cloudflare';
        r.headers['cache-control'] = 'private, max-age=0, no-store, no-cache, must-revalidate';
        return r;
      }
      case 'loginRedirect':
        return redirect(302, `${rt.origin}/login?next=${encodeURIComponent(url.pathname)}`);
      case 'offHostRedirect': {
        const next = this.runtimes[(site.index + 1) % this.runtimes.length];
        const location =
          o.location ??
          (next !== undefined && next !== rt
            ? `${next.origin}/`
            : `http://moved.invalid${url.pathname}`);
        return redirect(301, location);
      }
      case 'soft404':
        return text(200, soft404Html(site), html, true);
      case 'appShell': {
        const target = pagePath ?? url.pathname;
        const bundle = `/assets/app.js?p=${encodeURIComponent(target)}${o.clientRender === false ? '&render=0' : ''}`;
        return text(200, appShellHtml(site, bundle), html, true);
      }
      case 'gzipBomb': {
        const body = await gzipBomb(o.inflatedBytes ?? 128 * 1024 * 1024);
        return {
          status: 200,
          headers: { 'content-type': html, 'content-encoding': 'gzip' },
          body,
          compressible: false,
        };
      }
      default:
        throw new Error(`unhandled fault ${fault.kind}`);
    }
  }

  private send(
    req: IncomingMessage,
    res: ServerResponse,
    reply: Reply,
    slow: MutationOptions | undefined,
    entry: MutableLogEntry,
  ): void {
    const headers: Record<string, string> = { ...reply.headers };
    let status = reply.status;
    let body: Buffer | undefined = reply.body;
    if (reply.etag !== undefined) headers.etag = reply.etag;
    if (reply.lastModified !== undefined) headers['last-modified'] = httpDate(reply.lastModified);
    if (reply.etag !== undefined && headers['cache-control'] === undefined)
      headers['cache-control'] = 'no-cache';
    if (status === 200 && isNotModified(req, reply)) {
      status = 304;
      body = undefined;
      delete headers['content-type'];
    }
    if (reply.compressible) headers.vary = 'Accept-Encoding';
    if (
      body !== undefined &&
      reply.compressible &&
      acceptsGzip(req.headers['accept-encoding']) &&
      body.length > 0
    ) {
      const cacheEntry = reply.cacheEntry;
      let gz = cacheEntry?.gz;
      if (gz === undefined) {
        gz = gzipSync(body);
        if (cacheEntry !== undefined) cacheEntry.gz = gz;
      }
      body = gz;
      headers['content-encoding'] = 'gzip';
    }
    if (body !== undefined) headers['content-length'] = String(body.length);
    entry.encoding = headers['content-encoding'];
    const isHead = req.method === 'HEAD';
    const headerDelay = slow?.headerDelayMs ?? 0;
    const chunkDelay = slow?.chunkDelayMs ?? 0;
    const chunkSize = Math.max(1, slow?.chunkSize ?? 1024);
    const writeHead = () => {
      if (res.destroyed) return;
      entry.status = status;
      res.writeHead(status, headers);
    };
    const writeBody = async () => {
      if (body === undefined || isHead || res.destroyed) {
        res.end();
        return;
      }
      if (chunkDelay <= 0) {
        entry.bytes += body.length;
        res.end(body);
        return;
      }
      for (let off = 0; off < body.length; off += chunkSize) {
        if (res.destroyed || this.stopped) return;
        const chunk = body.subarray(off, off + chunkSize);
        entry.bytes += chunk.length;
        res.write(chunk);
        if (off + chunkSize < body.length) await this.sleep(chunkDelay);
      }
      res.end();
    };
    const run = async () => {
      if (headerDelay > 0) await this.sleep(headerDelay);
      if (this.stopped) return;
      writeHead();
      await writeBody();
    };
    void run();
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.timers.delete(t);
        resolve();
      }, ms);
      this.timers.add(t);
    });
  }
}

/** Characters outside Latin-1 that the generator uses, and what a Latin-1 site would write. */
const LATIN1_FALLBACK: Readonly<Record<string, string>> = {
  '\u2014': '-',
  '\u2026': '...',
  '\u201c': '"',
  '\u201d': '"',
  '\u200b': '',
};

function withCharset(reply: Reply, variant: CharsetVariant): Reply {
  if (variant === 'header' || variant === 'meta-only') {
    const type = variant === 'header' ? 'text/html; charset=ISO-8859-1' : 'text/html';
    return { ...reply, headers: { ...reply.headers, 'content-type': type } };
  }
  // A page really encoded as ISO-8859-1, declared in <meta> (and in the header for `latin1`).
  const html = reply.body
    .toString('utf8')
    .replace('<meta charset="utf-8">', '<meta charset="iso-8859-1">')
    .replace(/[\u0100-\uffff]/g, (ch) => LATIN1_FALLBACK[ch] ?? '?');
  const body = Buffer.from(html, 'latin1');
  const type = variant === 'latin1' ? 'text/html; charset=ISO-8859-1' : 'text/html';
  const { cacheEntry: _dropped, ...rest } = reply;
  return {
    ...rest,
    headers: { ...reply.headers, 'content-type': type },
    body,
    ...(reply.etag === undefined ? {} : { etag: strongEtag(body) }),
  };
}

function isNotModified(req: IncomingMessage, reply: Reply): boolean {
  if (reply.etag === undefined && reply.lastModified === undefined) return false;
  const inm = req.headers['if-none-match'];
  if (inm !== undefined) return reply.etag !== undefined && etagMatches(inm, reply.etag);
  const ims = req.headers['if-modified-since'];
  if (ims !== undefined && reply.lastModified !== undefined) {
    const since = Date.parse(ims);
    if (!Number.isNaN(since)) return Math.floor(reply.lastModified / 1000) * 1000 <= since;
  }
  return false;
}

function text(status: number, body: string, contentType: string, validators = false): Reply {
  return validated(status, Buffer.from(body, 'utf8'), contentType, validators);
}

function validated(status: number, body: Buffer, contentType: string, validators: boolean): Reply {
  const reply: Reply = {
    status,
    headers: { 'content-type': contentType },
    body,
    compressible: contentType !== 'application/gzip',
  };
  if (validators && status === 200) reply.etag = strongEtag(body);
  return reply;
}

function redirect(status: 301 | 302, location: string): Reply {
  const body = `<!DOCTYPE html>\n<html><head><title>Moved</title></head><body><p>Moved to <a href="${location.replaceAll('"', '&quot;')}">${location.replaceAll('<', '&lt;')}</a>.</p></body></html>\n`;
  return {
    status,
    headers: { location, 'content-type': 'text/html; charset=utf-8' },
    body: Buffer.from(body),
    compressible: false,
  };
}

function takeFault(holder: { fault: Fault | undefined }): Fault | undefined {
  const fault = holder.fault;
  if (fault === undefined) return undefined;
  if (fault.remaining !== undefined) {
    fault.remaining--;
    if (fault.remaining <= 0) holder.fault = undefined;
  }
  return fault;
}

function mergeMods(host: Modifiers, path: Modifiers): Modifiers {
  return {
    churn: host.churn || path.churn,
    slow: path.slow ?? host.slow,
    charset: path.charset ?? host.charset,
  };
}

function checkKind(kind: MutationKind, opts: MutationOptions): void {
  if (!ALL_KINDS.has(kind)) {
    throw invalid(`unknown mutation kind "${kind}"; use one of ${[...ALL_KINDS].join(', ')}`);
  }
  if (opts.charset !== undefined && !CHARSET_VARIANTS.includes(opts.charset)) {
    throw invalid(`charset must be one of ${CHARSET_VARIANTS.join(', ')}, got "${opts.charset}"`);
  }
  const numeric: [keyof MutationOptions, number, number][] = [
    ['retryAfter', 0, 86_400 * 365],
    ['headerDelayMs', 0, 3_600_000],
    ['chunkDelayMs', 0, 3_600_000],
    ['chunkSize', 1, 1 << 30],
    ['inflatedBytes', 1, 2 ** 32],
    ['status', 100, 599],
  ];
  for (const [name, min, max] of numeric) {
    const value = opts[name];
    if (value === undefined || value === null) continue;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
      throw invalid(`${name} must be an integer in ${min}..${max}, got ${String(value)}`);
    }
  }
  if (opts.times !== undefined && (!Number.isInteger(opts.times) || opts.times < 1)) {
    throw invalid(`times must be an integer >= 1, got ${opts.times}`);
  }
}

function applyServing(
  st: Pick<PathState, 'fault' | 'mods'>,
  kind: MutationKind,
  opts: MutationOptions,
): void {
  if (FAULT_KINDS.has(kind)) {
    // Copied, so a caller reusing its options object cannot change a fault already in place.
    st.fault = { kind, opts: { ...opts }, remaining: opts.times };
  } else if (kind === 'timestampChurn') {
    st.mods = { ...st.mods, churn: true };
  } else if (kind === 'slow') {
    st.mods = { ...st.mods, slow: { ...opts } };
  } else if (kind === 'wrongCharset') {
    st.mods = { ...st.mods, charset: opts.charset ?? 'header' };
  } else if (kind === 'restore') {
    st.fault = undefined;
    st.mods = noMods();
  }
}

export async function startSimWeb(options: SimWebOptions = {}): Promise<SimWeb> {
  const seed = options.seed ?? 1;
  const hosts = options.hosts ?? 3;
  const pagesPerHost = options.pagesPerHost ?? 20;
  const port = options.port ?? 0;
  if (!Number.isSafeInteger(seed)) throw invalid(`seed must be a safe integer, got ${seed}`);
  if (!Number.isInteger(hosts) || hosts < 1 || hosts > 1000)
    throw invalid(`hosts must be an integer in 1..1000, got ${hosts}`);
  if (!Number.isInteger(pagesPerHost) || pagesPerHost < 1 || pagesPerHost > 100_000) {
    throw invalid(`pagesPerHost must be an integer in 1..100000, got ${pagesPerHost}`);
  }
  if (!Number.isInteger(port) || port < 0 || port + hosts - 1 > 65_535) {
    throw invalid(
      `port must be 0 (ephemeral) or a base port with room for ${hosts} hosts, got ${port}`,
    );
  }
  if (hosts * pagesPerHost > MAX_TOTAL_PAGES) {
    throw invalid(
      `hosts x pagesPerHost must be at most ${MAX_TOTAL_PAGES} (got ${hosts * pagesPerHost}); use fewer hosts or pages`,
    );
  }
  const gen = new ContentGenerator(seed, pagesPerHost);
  const sim = new SimWebImpl(options, gen, hosts);
  await sim.listen(hosts, port);
  return sim;
}
