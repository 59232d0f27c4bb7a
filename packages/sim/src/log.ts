import type { IncomingMessage } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { RequestLogEntry } from './types.js';

/** A request log entry while its request is served: status, bytes and end time fill in later. */
export interface MutableLogEntry {
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

/** Every request the sim saw, in arrival order, the oldest dropped past `limit`. */
export class RequestLog {
  #entries: MutableLogEntry[] = [];
  #seq = 0;
  readonly #limit: number;

  constructor(limit: number) {
    this.#limit = limit;
  }

  /** Records a request as it arrives (sub-millisecond time, headers, requests in flight). */
  open(
    req: IncomingMessage,
    host: { readonly name: string; readonly origin: string },
    concurrent: number,
    connection: number,
  ): MutableLogEntry {
    const rawPath = req.url ?? '/';
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
    }
    const entry: MutableLogEntry = {
      seq: ++this.#seq,
      time: performance.timeOrigin + performance.now(),
      endTime: undefined,
      host: host.name,
      origin: host.origin,
      method: req.method ?? 'GET',
      path: rawPath,
      url: host.origin + rawPath,
      headers,
      status: 0,
      concurrent,
      connection,
      bytes: 0,
      encoding: undefined,
    };
    this.#entries.push(entry);
    if (this.#entries.length > this.#limit + 1024)
      this.#entries.splice(0, this.#entries.length - this.#limit);
    return entry;
  }

  /** Frozen copies, optionally of one host's requests only. */
  entries(host?: string): RequestLogEntry[] {
    return this.#entries
      .filter((e) => host === undefined || e.host === host)
      .map((e) => Object.freeze({ ...e, headers: Object.freeze({ ...e.headers }) }));
  }

  clear(): void {
    this.#entries = [];
  }
}
