import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { type FaultConfig, type FaultController, seededRandom } from '@ragfresh/core';

/** What the fault layer decided for one request. */
export type FaultDecision =
  | { readonly kind: 'none' }
  | { readonly kind: 'drop' }
  | { readonly kind: '429'; readonly retryAfterSeconds: number }
  | { readonly kind: '5xx' }
  | { readonly kind: 'timeout' };

/** The request a scripted fault is decided for (before its body is read). */
export interface FaultRequest {
  readonly method: string;
  readonly path: string;
}

/**
 * A fault chosen by a test for one request. `hold` delays the handling, by ms or until a promise
 * settles (a request that arrives late: a paused client's write in flight). `afterApply` runs once the handler has applied the
 * request (whatever the decision does to the answer): a test kills its client process there to
 * model a crash after the write landed.
 */
export type ScriptedFault = FaultDecision & {
  readonly hold?: number | Promise<unknown>;
  readonly afterApply?: () => void;
};

/** Chooses a fault per request; undefined falls through to the random rates. */
export type FaultHook = (request: FaultRequest) => ScriptedFault | undefined;

/** Fault state shared by an emulator; implements the FaultController of `StoreTarget.faults`. */
export class Faults implements FaultController {
  #config: FaultConfig = {};
  readonly #random: () => number;
  #hook: FaultHook | undefined;
  /** Counts of injected faults, for tests that assert a fault really happened. */
  readonly injected = { drop: 0, '429': 0, '5xx': 0, timeout: 0 };

  constructor(seed = 1) {
    this.#random = seededRandom(seed);
  }

  set(config: FaultConfig): void {
    for (const [key, value] of Object.entries(config)) {
      if (
        value !== undefined &&
        (typeof value !== 'number' || !Number.isFinite(value) || value < 0)
      ) {
        throw new TypeError(`fault ${key} must be a non-negative number, got ${String(value)}`);
      }
    }
    this.#config = { ...config };
  }

  reset(): void {
    this.#config = {};
    this.#hook = undefined;
  }

  /** Scripts faults request by request (fault-at-every-request tests); undefined removes it. */
  intercept(hook: FaultHook | undefined): void {
    this.#hook = hook;
  }

  get config(): FaultConfig {
    return this.#config;
  }

  get visibilityLagMs(): number {
    return this.#config.visibilityLagMs ?? 0;
  }

  decide(request: FaultRequest = { method: '', path: '' }): ScriptedFault {
    const scripted = this.#hook?.(request);
    if (scripted !== undefined) return this.#count(scripted);
    const c = this.#config;
    if (this.#hit(c.dropRate)) return this.#count({ kind: 'drop' });
    if (this.#hit(c.rate429))
      return this.#count({ kind: '429', retryAfterSeconds: c.retryAfterSeconds ?? 1 });
    if (this.#hit(c.rate5xx)) return this.#count({ kind: '5xx' });
    if (this.#hit(c.timeoutRate)) return this.#count({ kind: 'timeout' });
    return { kind: 'none' };
  }

  #hit(rate: number | undefined): boolean {
    return rate !== undefined && rate > 0 && this.#random() < rate;
  }

  #count<D extends FaultDecision>(d: D): D {
    if (d.kind !== 'none') this.injected[d.kind] += 1;
    return d;
  }
}

/**
 * Writes that become readable only after the configured visibility lag. Reads call `settle()`
 * first; writes call `apply()`, which runs now when the lag is 0.
 */
export class LaggedLog {
  readonly #pending: Array<{ at: number; run: () => void }> = [];

  apply(lagMs: number, run: () => void): void {
    if (lagMs <= 0 && this.#pending.length === 0) {
      run();
      return;
    }
    this.#pending.push({ at: Date.now() + lagMs, run });
  }

  settle(): void {
    const now = Date.now();
    while (this.#pending.length > 0 && this.#pending[0]!.at <= now) this.#pending.shift()!.run();
  }

  /** Writes accepted but not applied yet. */
  get pending(): number {
    return this.#pending.length;
  }

  /** When the last pending write becomes due (ms since epoch; 0 when none is pending). */
  get lastDueAt(): number {
    return this.#pending.reduce((m, p) => Math.max(m, p.at), 0);
  }

  /** Applies everything at once (tests and shutdown). */
  flush(): void {
    while (this.#pending.length > 0) this.#pending.shift()!.run();
  }
}

export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
    readonly headers: Record<string, string> = {},
  ) {
    super(`HTTP ${status}`);
  }
}

/** A handler result with a status other than 200. */
export class Reply {
  constructor(
    readonly status: number,
    readonly body: unknown,
    readonly headers: Record<string, string> = {},
  ) {}
}

export interface EmulatorRequest {
  readonly method: string;
  readonly path: string;
  readonly query: URLSearchParams;
  readonly headers: IncomingMessage['headers'];
  readonly rawBody: Buffer;
  /** Parsed JSON body; undefined when the body is empty. Throws via `parseError` when malformed. */
  readonly body: unknown;
}

export interface EmulatorHandlers {
  /** Maximum accepted body size in bytes (413 beyond it). */
  readonly maxBodyBytes: number;
  /** Body for a request whose JSON does not parse. */
  parseError(message: string): HttpError;
  /** Body for a body over maxBodyBytes. */
  tooLarge(size: number): HttpError;
  /** Body of an injected 429 / 5xx. */
  faultBody(status: number): unknown;
  handle(req: EmulatorRequest): unknown | Promise<unknown>;
}

export interface RunningServer {
  readonly url: string;
  readonly server: Server;
  close(): Promise<void>;
}

/** Starts a node:http server on 127.0.0.1 that runs faults first, then the handlers. */
export async function startJsonServer(
  handlers: EmulatorHandlers,
  faults: Faults,
  port = 0,
): Promise<RunningServer> {
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    void serve(req, res, handlers, faults);
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const { port: bound } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${bound}`,
    server,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function send(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

async function readBody(req: IncomingMessage, limit: number): Promise<Buffer | number> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size <= limit) chunks.push(chunk as Buffer);
  }
  return size > limit ? size : Buffer.concat(chunks);
}

async function serve(
  req: IncomingMessage,
  res: ServerResponse,
  h: EmulatorHandlers,
  faults: Faults,
): Promise<void> {
  const decision = faults.decide({
    method: req.method ?? 'GET',
    path: new URL(req.url ?? '/', 'http://emulator').pathname,
  });
  if (decision.kind === 'drop') {
    // The connection dies before any byte of a response: the client sees a socket error.
    req.socket.destroy();
    return;
  }
  if (decision.kind === '429') {
    send(res, 429, h.faultBody(429), { 'retry-after': String(decision.retryAfterSeconds) });
    return;
  }
  if (decision.kind === '5xx') {
    send(res, 503, h.faultBody(503));
    return;
  }
  try {
    const raw = await readBody(req, h.maxBodyBytes);
    if (typeof raw === 'number') throw h.tooLarge(raw);
    const hold = decision.hold;
    if (typeof hold === 'number') await new Promise((r) => setTimeout(r, hold));
    else if (hold !== undefined) await hold.catch(() => undefined);
    const url = new URL(req.url ?? '/', 'http://emulator');
    let body: unknown;
    if (raw.length > 0) {
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch (err) {
        throw h.parseError(err instanceof Error ? err.message : String(err));
      }
    }
    const result = await h.handle({
      method: req.method ?? 'GET',
      path: url.pathname,
      query: url.searchParams,
      headers: req.headers,
      rawBody: raw,
      body,
    });
    decision.afterApply?.();
    if (decision.kind === 'timeout') {
      // The write has been applied but the answer never comes: the client times out and
      // must retry idempotently. The socket is destroyed when the server closes.
      return;
    }
    if (result instanceof Reply) send(res, result.status, result.body, result.headers);
    else send(res, 200, result);
  } catch (err) {
    decision.afterApply?.();
    if (decision.kind === 'timeout') return;
    if (err instanceof HttpError) {
      send(res, err.status, err.body, err.headers);
      return;
    }
    send(res, 500, h.faultBody(500));
  }
}
