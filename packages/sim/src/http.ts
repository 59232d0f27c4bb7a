/**
 * HTTP semantics of the sim's replies: validators and conditional requests, gzip negotiation,
 * charset variants, and writing a reply (optionally slowly) to the socket.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { gzipSync } from 'node:zlib';
import type { MutableLogEntry } from './log.js';
import type { CharsetVariant, MutationOptions } from './types.js';

export interface Reply {
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

export interface CachedBody {
  body: Buffer;
  etag: string;
  gz: Buffer | undefined;
}

export function strongEtag(body: Buffer): string {
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

export function text(status: number, body: string, contentType: string, validators = false): Reply {
  return validated(status, Buffer.from(body, 'utf8'), contentType, validators);
}

export function validated(
  status: number,
  body: Buffer,
  contentType: string,
  validators: boolean,
): Reply {
  const reply: Reply = {
    status,
    headers: { 'content-type': contentType },
    body,
    compressible: contentType !== 'application/gzip',
  };
  if (validators && status === 200) reply.etag = strongEtag(body);
  return reply;
}

export function redirect(status: 301 | 302, location: string): Reply {
  const body = `<!DOCTYPE html>\n<html><head><title>Moved</title></head><body><p>Moved to <a href="${location.replaceAll('"', '&quot;')}">${location.replaceAll('<', '&lt;')}</a>.</p></body></html>\n`;
  return {
    status,
    headers: { location, 'content-type': 'text/html; charset=utf-8' },
    body: Buffer.from(body),
    compressible: false,
  };
}

/** Characters outside Latin-1 that the generator uses, and what a Latin-1 site would write. */
const LATIN1_FALLBACK: Readonly<Record<string, string>> = {
  '\u2014': '-',
  '\u2026': '...',
  '\u201c': '"',
  '\u201d': '"',
  '\u200b': '',
};

/** An HTML reply served under a wrong or missing charset, or really encoded as Latin-1. */
export function withCharset(reply: Reply, variant: CharsetVariant): Reply {
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

/** Rendered bodies by key, least recently used dropped past `size`; each with its ETag and gzip. */
export class RenderCache {
  readonly #entries = new Map<string, CachedBody>();
  readonly #size: number;

  constructor(size: number) {
    this.#size = size;
  }

  get(key: string, render: () => string): CachedBody {
    const hit = this.#entries.get(key);
    if (hit !== undefined) {
      this.#entries.delete(key);
      this.#entries.set(key, hit);
      return hit;
    }
    const body = Buffer.from(render(), 'utf8');
    const entry: CachedBody = { body, etag: strongEtag(body), gz: undefined };
    this.#entries.set(key, entry);
    if (this.#entries.size > this.#size) {
      const oldest = this.#entries.keys().next().value;
      if (oldest !== undefined) this.#entries.delete(oldest);
    }
    return entry;
  }

  clear(): void {
    this.#entries.clear();
  }
}

/** How a reply is paced: the server's own timers, so `stop()` can cancel a slow write. */
export interface Pacer {
  sleep(ms: number): Promise<void>;
  readonly stopped: boolean;
}

/**
 * Writes a reply: validators as headers, a 304 for a matching conditional request, gzip when
 * accepted, and the `slow` modifier's header delay and chunked body.
 */
export function sendReply(
  req: IncomingMessage,
  res: ServerResponse,
  reply: Reply,
  slow: MutationOptions | undefined,
  entry: MutableLogEntry,
  pacer: Pacer,
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
      if (res.destroyed || pacer.stopped) return;
      const chunk = body.subarray(off, off + chunkSize);
      entry.bytes += chunk.length;
      res.write(chunk);
      if (off + chunkSize < body.length) await pacer.sleep(chunkDelay);
    }
    res.end();
  };
  const run = async () => {
    if (headerDelay > 0) await pacer.sleep(headerDelay);
    if (pacer.stopped) return;
    writeHead();
    await writeBody();
  };
  void run();
}
