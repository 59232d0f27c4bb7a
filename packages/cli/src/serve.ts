import { createHash, timingSafeEqual } from 'node:crypto';
import { mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { errorMessage, reasonLine } from '@ragfresh/core';
import {
  type ExportCoverage,
  type ImportReport,
  importRows,
  readExport,
} from '@ragfresh/engine/import';
import type { ResolvedConfig, ResolvedSource } from './config.js';
import { EXIT } from './exit.js';
import { type ImportArgs, ImportUsageError, mappingOf, sourceOf } from './import-args.js';
import type { Logger } from './log.js';
import type { Runtime } from './runtime.js';
import { apifyItemsPage, getStreamed } from './vendor-pages.js';

type Print = (s: string) => void;

/** Reads of one vendor page (or one Web Scraper job's data) whose body may break off mid-stream. */
const BODY_ATTEMPTS = 3;
/** Refused rows named one log line each, per page; the rest are counted. */
const REFUSED_LINES = 20;

/** The vendor's response body broke off while it was read (connection cut or reset). */
class BodyCut extends Error {
  override readonly name = 'BodyCut';
}

/** The body as the export reader reads it; a failure of the transport itself becomes `BodyCut`. */
async function* cutAware(body: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
  try {
    for await (const chunk of body) yield chunk;
  } catch (err) {
    throw new BodyCut(`the response body broke off: ${errorMessage(err)}`, { cause: err });
  }
}

/**
 * Runs one read-and-import of a vendor body, again from its start when the body broke off
 * mid-stream: rows already published by the broken attempt are unchanged on the next (a no-op),
 * the rest are imported. Any other failure (a refusal, a store error) is not retried here.
 */
async function readingAgain<T>(
  what: string,
  log: Logger,
  key: string,
  attempt: (body: (raw: AsyncIterable<Uint8Array>) => AsyncIterable<Uint8Array>) => Promise<T>,
): Promise<T> {
  for (let n = 1; ; n++) {
    try {
      return await attempt(cutAware);
    } catch (err) {
      if (!(err instanceof BodyCut)) throw err;
      if (n >= BODY_ATTEMPTS)
        throw new Error(`${what}: ${err.message} (${n} reads; the event can be delivered again)`);
      log.warn('hook-import-body-cut', { key, what, attempt: n, error: err.message });
      await sleep(250 * 2 ** (n - 1));
    }
  }
}

/** One delivery of a vendor webhook, persisted before it is acknowledged. */
export interface HookEvent {
  /** `apify:<run id>` or `webscraper:<job id>:<status>`: a retried delivery has the same key. */
  readonly key: string;
  readonly vendor: 'apify' | 'webscraper';
  readonly receivedAt: string;
  status: 'pending' | 'done' | 'failed' | 'ignored';
  /** Apify dataset id, or Web Scraper job id. */
  readonly resource: string;
  /** Web Scraper job status, Apify run status. */
  readonly resourceStatus?: string;
  /** Items imported so far (Apify pages resume from here after a crash). */
  offset: number;
  attempts: number;
  error?: string;
  finishedAt?: string;
}

/** Events as one JSON file each: created exclusively (a retried delivery is recorded once), replaced atomically. */
class HookEventStore {
  readonly #dir: string;
  #writes = 0;
  constructor(dir: string) {
    this.#dir = dir;
  }
  #file(key: string): string {
    return join(this.#dir, `${createHash('sha256').update(key).digest('hex').slice(0, 32)}.json`);
  }
  async open(): Promise<void> {
    await mkdir(this.#dir, { recursive: true });
  }
  /** Records the event unless it exists; returns whether this delivery was the first. */
  async record(event: HookEvent): Promise<boolean> {
    try {
      await writeFile(this.#file(event.key), JSON.stringify(event), { flag: 'wx' });
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      return false;
    }
  }
  async get(key: string): Promise<HookEvent | undefined> {
    try {
      return JSON.parse(await readFile(this.#file(key), 'utf8')) as HookEvent;
    } catch {
      return undefined;
    }
  }
  async put(event: HookEvent): Promise<void> {
    const tmp = `${this.#file(event.key)}.${process.pid}.${++this.#writes}.tmp`;
    await writeFile(tmp, JSON.stringify(event));
    await rename(tmp, this.#file(event.key));
  }
  async list(): Promise<HookEvent[]> {
    const out: HookEvent[] = [];
    for (const name of await readdir(this.#dir)) {
      if (!name.endsWith('.json')) continue;
      try {
        out.push(JSON.parse(await readFile(join(this.#dir, name), 'utf8')) as HookEvent);
      } catch {
        // a half-written temp file is not an event
      }
    }
    return out;
  }
}

class BodyTooLarge extends Error {}

async function readBody(req: IncomingMessage, max: number): Promise<string> {
  const declared = Number(req.headers['content-length'] ?? '0');
  if (declared > max) throw new BodyTooLarge();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size > max) throw new BodyTooLarge();
    chunks.push(c as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function signed(req: IncomingMessage, url: URL, secret: string): boolean {
  const auth = req.headers.authorization;
  const given =
    (typeof req.headers['x-ragfresh-secret'] === 'string'
      ? req.headers['x-ragfresh-secret']
      : undefined) ??
    (auth?.startsWith('Bearer ') ? auth.slice(7) : undefined) ??
    // Web Scraper Cloud posts to a URL and sends no custom header: the secret rides in the query.
    url.searchParams.get('secret') ??
    '';
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(secret).digest();
  return given !== '' && timingSafeEqual(a, b);
}

interface ServeSettings {
  readonly source: ResolvedSource;
  readonly secret: string;
  readonly maxBody: number;
  readonly pageSize: number;
  readonly apifyBaseUrl?: string;
  readonly apifyToken?: string;
  readonly webscraperBaseUrl: string;
  readonly webscraperToken?: string;
  readonly coverage?: string;
  readonly args: ImportArgs;
}

/** The vendor payload, read into an event; undefined when the delivery is not one we import. */
function apifyEvent(body: string, now: string): HookEvent | { ignored: string } {
  let p: Record<string, unknown>;
  try {
    p = JSON.parse(body) as Record<string, unknown>;
  } catch {
    return { ignored: 'body is not JSON' };
  }
  const eventData = (p.eventData ?? {}) as Record<string, unknown>;
  const resource = (p.resource ?? {}) as Record<string, unknown>;
  const runId = String(eventData.actorRunId ?? resource.id ?? '');
  const datasetId = typeof resource.defaultDatasetId === 'string' ? resource.defaultDatasetId : '';
  if (runId === '' || datasetId === '')
    return { ignored: 'no eventData.actorRunId / resource.defaultDatasetId' };
  const succeeded = p.eventType === 'ACTOR.RUN.SUCCEEDED';
  return {
    key: `apify:${runId}`,
    vendor: 'apify',
    receivedAt: now,
    status: succeeded ? 'pending' : 'ignored',
    resource: datasetId,
    ...(typeof resource.status === 'string' ? { resourceStatus: resource.status } : {}),
    offset: 0,
    attempts: 0,
    ...(succeeded ? {} : { error: `eventType ${String(p.eventType)} is not ACTOR.RUN.SUCCEEDED` }),
  };
}

function webscraperEvent(body: string, now: string): HookEvent | { ignored: string } {
  const form = new URLSearchParams(body);
  const job = form.get('scrapingjob_id') ?? '';
  const status = form.get('status') ?? '';
  if (job === '') return { ignored: 'no scrapingjob_id' };
  return {
    key: `webscraper:${job}:${status}`,
    vendor: 'webscraper',
    receivedAt: now,
    status: 'pending',
    resource: job,
    resourceStatus: status,
    offset: 0,
    attempts: 0,
  };
}

/** The background importer: one event at a time, each resumable from its persisted offset. */
class Importer {
  #chain: Promise<void> = Promise.resolve();
  #queued = new Set<string>();
  constructor(
    private readonly rt: Runtime,
    private readonly events: HookEventStore,
    private readonly settings: ServeSettings,
    private readonly log: Logger,
  ) {}

  get pending(): number {
    return this.#queued.size;
  }

  enqueue(key: string): void {
    if (this.#queued.has(key)) return;
    this.#queued.add(key);
    this.#chain = this.#chain.then(() => this.#run(key)).finally(() => this.#queued.delete(key));
  }

  idle(): Promise<void> {
    return this.#chain;
  }

  async #run(key: string): Promise<void> {
    const event = await this.events.get(key);
    if (event === undefined || event.status !== 'pending') return;
    event.attempts++;
    await this.events.put(event);
    const count = (outcome: string) =>
      this.rt.metrics.inc('ragfresh_webhook_imports_total', 'Background imports by outcome.', {
        vendor: event.vendor,
        outcome,
      });
    try {
      if (event.vendor === 'apify') await this.#apify(event);
      else await this.#webscraper(event);
      event.status = 'done';
      count('done');
    } catch (err) {
      event.status = 'failed';
      event.error = errorMessage(err);
      count('failed');
      this.log.warn('hook-import-failed', { key, error: event.error });
    }
    event.finishedAt = new Date().toISOString();
    await this.events.put(event);
  }

  #coverage(complete: boolean, reasons: string[]): ExportCoverage {
    if (this.settings.coverage === 'complete' && complete) return { complete: true, reasons: [] };
    return { complete: false, reasons };
  }

  async #apify(event: HookEvent): Promise<void> {
    const ctx = this.rt.context({ batchSize: 25 });
    for (;;) {
      const what = `Apify dataset ${event.resource} items from ${event.offset}`;
      const { page, offset, report } = await readingAgain(
        what,
        this.log,
        event.key,
        async (body) => {
          const page = await apifyItemsPage({
            baseUrl: this.settings.apifyBaseUrl ?? 'https://api.apify.com',
            ...(this.settings.apifyToken === undefined ? {} : { token: this.settings.apifyToken }),
            datasetId: event.resource,
            offset: event.offset,
            limit: this.settings.pageSize,
          });
          const offset = page.offset ?? event.offset;
          const stream = readExport(body(page.body), { format: 'apify-wcc' });
          const report = await importRows(ctx, {
            source: this.settings.source,
            rows: stream.items,
            label: `Apify dataset ${event.resource} items from ${offset}`,
            // A succeeded run may still have stopped at maxCrawlPages: the dataset cannot prove coverage.
            coverage: this.#coverage(true, [
              'an Apify dataset does not prove the crawl covered every page',
            ]),
          });
          return { page, offset, report };
        },
      );
      // Items of the page: the vendor's count, else the records read (rows, unreadable, refused).
      const count = page.count ?? report.counts.rows;
      if (count === 0) break;
      // The rows of this page are published (journalled) before the offset moves: a crash re-imports them, a no-op.
      event.offset = offset + count;
      await this.events.put(event);
      this.#pageReport(event, report, page.total);
      if (page.total !== undefined && event.offset >= page.total) break;
    }
  }

  /** One line per imported page, naming what was not imported (refused or unreadable records). */
  #pageReport(event: HookEvent, report: ImportReport, total: number | undefined): void {
    this.log.info('hook-import-page', {
      key: event.key,
      offset: event.offset,
      ...(total === undefined ? {} : { total }),
      published: report.counts.published,
      refused: report.counts.refused,
      unreadable: report.counts.unreadable,
      ...(report.counts.refused === 0
        ? {}
        : {
            refusedBy: Object.entries(report.refusedBy)
              .map(([code, n]) => `${code} ${n}`)
              .join(', '),
          }),
    });
    for (const u of report.unreadable.slice(0, 20))
      this.log.warn('hook-import-unreadable', { key: event.key, line: u.line, reason: u.reason });
    // Each refused row by its URL and reason, so a webhook user can find the page it left out.
    const refused = report.events.filter((e) => e.event === 'refused');
    for (const e of refused.slice(0, REFUSED_LINES))
      this.log.warn('hook-import-refused', {
        key: event.key,
        url: e.url,
        reason: e.reasons.map(reasonLine).join('; '),
      });
    const unnamed = report.counts.refused - Math.min(refused.length, REFUSED_LINES);
    if (unnamed > 0)
      this.log.warn('hook-import-refused-more', { key: event.key, refused: unnamed });
  }

  async #webscraper(event: HookEvent): Promise<void> {
    const base = this.settings.webscraperBaseUrl.replace(/\/$/, '');
    const token = encodeURIComponent(this.settings.webscraperToken ?? '');
    const job = encodeURIComponent(event.resource);
    const meta = await fetch(`${base}/scraping-job/${job}?api_token=${token}`);
    if (!meta.ok)
      throw new Error(`Web Scraper API answered ${meta.status} for scraping job ${event.resource}`);
    const info =
      ((await meta.json()) as { data?: { time_created?: number; status?: string } }).data ?? {};
    const what = `the data of Web Scraper job ${event.resource}`;
    const status = info.status ?? event.resourceStatus;
    const report = await readingAgain(what, this.log, event.key, async (body) => {
      const data = await getStreamed({
        url: `${base}/scraping-job/${job}/json?api_token=${token}`,
        what,
      });
      const stream = readExport(body(data.body), {
        format: 'webscraper',
        webscraper: mappingOf(this.settings.args.map),
        ...(status === undefined ? {} : { jobStatus: status }),
      });
      return importRows(this.rt.context({ batchSize: 25 }), {
        source: this.settings.source,
        rows: stream.items,
        label: `Web Scraper job ${event.resource}`,
        coverage: () => stream.coverage(),
        // Rows carry no fetch time; the job's creation time is a safe lower bound.
        ...(info.time_created === undefined
          ? {}
          : { fetchedAt: new Date(info.time_created * 1000).toISOString() }),
      });
    });
    this.#pageReport(event, report, undefined);
  }
}

function answer(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

/**
 * `ragfresh serve`: webhook receiver. A delivery is authenticated (shared secret), bounded in
 * size, persisted once per run or job id, acknowledged, and only then imported in the background.
 */
export async function serveCommand(
  config: ResolvedConfig,
  v: ImportArgs,
  log: Logger,
  print: Print,
): Promise<number> {
  const source = sourceOf(config, v.source);
  const secretEnv = v['secret-env'] ?? 'RAGFRESH_WEBHOOK_SECRET';
  const secret = process.env[secretEnv];
  if (secret === undefined || secret === '')
    throw new ImportUsageError(
      `serve needs a shared secret in $${secretEnv}; set it (or name another variable with --secret-env).`,
    );
  const num = (x: string | undefined, flag: string, d: number) => {
    if (x === undefined) return d;
    const n = Number(x);
    if (!Number.isInteger(n) || n < 0)
      throw new ImportUsageError(`${flag} ${x} is not a non-negative integer.`);
    return n;
  };
  const settings: ServeSettings = {
    source,
    secret,
    maxBody: num(v['max-body'], '--max-body', 64 * 1024),
    pageSize: Math.max(1, num(v['page-size'], '--page-size', 250)),
    ...(v['apify-base-url'] === undefined ? {} : { apifyBaseUrl: v['apify-base-url'] }),
    ...(process.env[v['apify-token-env'] ?? 'APIFY_TOKEN'] === undefined
      ? {}
      : { apifyToken: process.env[v['apify-token-env'] ?? 'APIFY_TOKEN']! }),
    webscraperBaseUrl: v['webscraper-base-url'] ?? 'https://api.webscraper.io/api/v1',
    ...(process.env[v['webscraper-token-env'] ?? 'WEBSCRAPER_API_TOKEN'] === undefined
      ? {}
      : { webscraperToken: process.env[v['webscraper-token-env'] ?? 'WEBSCRAPER_API_TOKEN']! }),
    ...(v.coverage === undefined ? {} : { coverage: v.coverage }),
    args: v,
  };
  const events = new HookEventStore(join(config.dataDir, 'hooks'));
  await events.open();
  const { openRuntime } = await import('./runtime.js');
  const rt = await openRuntime(config, { log, role: 'import' });
  const importer = new Importer(rt, events, settings, log);
  const count = (hook: string, outcome: string) =>
    rt.metrics.inc('ragfresh_webhook_requests_total', 'Webhook requests by hook and outcome.', {
      hook,
      outcome,
    });

  const server = createServer((req, res) => {
    void handle(req, res).catch((err: unknown) => {
      log.warn('hook-error', { error: errorMessage(err) });
      if (!res.headersSent) answer(res, 500, { error: 'internal error' });
    });
  });
  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (req.method === 'GET' && url.pathname === '/healthz') {
      const all = await events.list();
      return answer(res, 200, {
        status: 'ok',
        pending: all.filter((e) => e.status === 'pending').length,
        failed: all.filter((e) => e.status === 'failed').length,
        done: all.filter((e) => e.status === 'done').length,
      });
    }
    if (req.method === 'GET' && url.pathname === '/metrics') {
      const all = await events.list();
      rt.metrics.set(
        'ragfresh_webhook_events_pending',
        'Persisted webhook events not yet imported.',
        {},
        all.filter((e) => e.status === 'pending').length,
      );
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
      return void res.end(rt.metrics.render());
    }
    const hook =
      url.pathname === '/hooks/apify'
        ? 'apify'
        : url.pathname === '/hooks/webscraper'
          ? 'webscraper'
          : undefined;
    if (hook === undefined) return answer(res, 404, { error: 'not found' });
    if (req.method !== 'POST') return answer(res, 405, { error: 'POST only' });
    if (!signed(req, url, settings.secret)) {
      count(hook, 'unauthorized');
      req.resume();
      return answer(res, 401, { error: 'missing or wrong shared secret' });
    }
    let body: string;
    try {
      body = await readBody(req, settings.maxBody);
    } catch (err) {
      if (!(err instanceof BodyTooLarge)) throw err;
      count(hook, 'too-large');
      res.setHeader('connection', 'close');
      return answer(res, 413, { error: `body larger than ${settings.maxBody} bytes` });
    }
    const now = new Date().toISOString();
    const event = hook === 'apify' ? apifyEvent(body, now) : webscraperEvent(body, now);
    if ('ignored' in event) {
      count(hook, 'unreadable');
      return answer(res, 400, { error: event.ignored });
    }
    // A retried delivery finds the event already recorded: it is counted, never imported again.
    const first = await events.record(event);
    count(hook, first ? 'accepted' : 'duplicate');
    // Acknowledge first; the import runs after the answer is on its way.
    answer(res, 202, { key: event.key, duplicate: !first, status: first ? event.status : 'known' });
    if (first && event.status === 'pending') setImmediate(() => importer.enqueue(event.key));
  }

  // Events a previous process persisted but did not finish resume now.
  for (const e of await events.list()) if (e.status === 'pending') importer.enqueue(e.key);
  const port = num(v.port, '--port', 8787);
  const host = v.host ?? '127.0.0.1';
  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  const addr = server.address();
  const bound = typeof addr === 'object' && addr !== null ? addr.port : port;
  log.info('serve-listening', { host, port: bound });
  print(
    `listening on http://${host}:${bound} (POST /hooks/apify, POST /hooks/webscraper, GET /healthz, GET /metrics)`,
  );
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await importer.idle();
  await rt.close();
  return EXIT.ok;
}
