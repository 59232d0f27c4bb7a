/**
 * The simulated web: one node:http server per virtual host on 127.0.0.1, so anything keyed by
 * origin (per-host politeness, robots caches, connection pools) sees distinct hosts. This file
 * holds the public API and request dispatch; what each path serves is `routes.ts`, faults and
 * modifiers `faults.ts`, HTTP semantics `http.ts`, the mutable site model `state.ts`, the
 * request log `log.ts`.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { RagfreshError } from '@ragfresh/core';
import { baseTime, ContentGenerator, MAX_TOTAL_PAGES, PRISTINE } from './content.js';
import { invalid } from './errors.js';
import {
  applyServing,
  CONTENT_KINDS,
  checkKind,
  faultReply,
  isDeletion,
  mergeMods,
  noMods,
  takeFault,
} from './faults.js';
import { type Pacer, type Reply, sendReply, text, withCharset } from './http.js';
import { type MutableLogEntry, RequestLog } from './log.js';
import { pageMarkdown } from './render.js';
import { SiteRoutes } from './routes.js';
import { type HostRuntime, mutatedContent, PathStates, twinPath } from './state.js';
import type {
  MutationKind,
  MutationOptions,
  PageFacts,
  RequestLogEntry,
  RobotsSpec,
  ScheduledMutation,
  SimHostInfo,
  SimWebOptions,
} from './types.js';

export { twinPath } from './state.js';

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

const HOUR = 3_600_000;

class SimWebImpl implements SimWeb, Pacer {
  readonly seed: number;
  private readonly gen: ContentGenerator;
  private readonly runtimes: HostRuntime[] = [];
  private readonly byName = new Map<string, HostRuntime>();
  private readonly byPort = new Map<number, HostRuntime>();
  private readonly states = new PathStates();
  private readonly routes: SiteRoutes;
  private readonly requests: RequestLog;
  private pending: ScheduledMutation[] = [];
  private clock = 0;
  private mutations = 0;
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly connectionIds = new WeakMap<Socket, number>();
  private connections = 0;
  stopped = false;
  private readonly robotsOption: SimWebOptions['robots'];

  constructor(options: SimWebOptions, gen: ContentGenerator, hostCount: number) {
    this.seed = gen.seed;
    this.gen = gen;
    this.requests = new RequestLog(options.logLimit ?? 100_000);
    this.robotsOption = options.robots;
    this.routes = new SiteRoutes({
      gen,
      states: this.states,
      markdownTwins: options.markdownTwins ?? true,
      cacheSize: options.cacheSize ?? 5_000,
    });
    for (let i = 0; i < hostCount; i++) this.routes.addHost(i);
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

  /** A page URL (or its twin's) resolved to its host, page path and page spec. */
  private locatePage(url: string) {
    const { rt, path } = this.locate(url);
    const pagePath = this.routes.pagePathOf(rt.site.index, path);
    const spec = pagePath === undefined ? undefined : rt.site.byPath.get(pagePath);
    if (spec === undefined || pagePath === undefined) {
      throw invalid(`"${url}" is not a page URL; pass one from sim.urls()`);
    }
    const st = this.states.peek(rt.site.index, pagePath);
    const page = this.gen.page(rt.site.index, spec.index, st?.content ?? PRISTINE);
    return { rt, pagePath, spec, st, page };
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
    return pageMarkdown(this.locatePage(url).page);
  }

  pageFacts(url: string): PageFacts {
    const { rt, pagePath, spec, st, page } = this.locatePage(url);
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
      markdownUrl: this.routes.markdownTwins ? rt.origin + twinPath(pagePath) : undefined,
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
      const pagePath = this.routes.pagePathOf(hostIndex, path);
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
    applyServing(this.states.get(hostIndex, path), kind, opts);
  }

  private applyContent(
    hostIndex: number,
    pagePath: string,
    kind: MutationKind,
    opts: MutationOptions,
  ): void {
    const st = this.states.get(hostIndex, pagePath);
    const spec = this.gen.site(hostIndex).byPath.get(pagePath);
    if (spec === undefined) return;
    const content = mutatedContent(this.gen, hostIndex, spec.index, st.content, kind, opts);
    if (content === undefined) return;
    st.content = content;
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
        isDue = (this.states.peek(rt.site.index, path)?.served ?? 0) >= step.afterRequests;
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
    return this.requests.entries(host === undefined ? undefined : this.runtime(host).site.name);
  }

  clearLog(): void {
    this.requests.clear();
  }

  reset(): void {
    this.states.clear();
    this.routes.clearCache();
    this.pending = [];
    this.requests.clear();
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
    rt.inFlight++;
    const entry = this.requests.open(
      req,
      { name: rt.site.name, origin: rt.origin },
      rt.inFlight,
      this.connectionIds.get(req.socket) ?? 0,
    );
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
    const st = this.states.get(hostIndex, path);
    const pagePath = this.routes.pagePathOf(hostIndex, path);
    const pageState = pagePath === undefined ? undefined : this.states.get(hostIndex, pagePath);

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
        if (isDeletion(pageState.fault)) fault = pageState.fault;
      }
      reply =
        fault === undefined
          ? this.routes.route(rt, url, pagePath, pageState, mods)
          : await faultReply({ ...this.faultTarget(rt), url, pagePath }, fault);
    }
    st.served++;
    if (mods.charset !== undefined && reply.headers['content-type']?.startsWith('text/html')) {
      reply = withCharset(reply, mods.charset);
    }
    sendReply(req, res, reply, mods.slow, entry, this);
  }

  private faultTarget(rt: HostRuntime) {
    const next = this.runtimes[(rt.site.index + 1) % this.runtimes.length];
    return {
      site: rt.site,
      origin: rt.origin,
      otherOrigin: next !== undefined && next !== rt ? next.origin : undefined,
    };
  }

  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.timers.delete(t);
        resolve();
      }, ms);
      this.timers.add(t);
    });
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
