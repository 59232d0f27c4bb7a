import type { EngineLogger, Heartbeat } from './types.js';

/** How often the page pool says which page it waits on longest, unless the logger says otherwise. */
export const DEFAULT_HEARTBEAT_MS = 10_000;

/**
 * The pages of a refresh's pool that are in flight, and a timer that reports the slowest one
 * through `EngineLogger.heartbeat` every `heartbeatMs` while any is: a page that hangs keeps
 * the progress coming and is named, instead of the run going silent until a timeout.
 */
export class InFlightPages {
  readonly #started = new Map<number, { url: string; sourceId: string; at: number }>();
  #next = 0;
  #timer: NodeJS.Timeout | undefined;

  readonly #log: EngineLogger;
  readonly #progress: () => { readonly done: number; readonly total: number };

  constructor(
    log: EngineLogger,
    progress: () => { readonly done: number; readonly total: number },
  ) {
    this.#log = log;
    this.#progress = progress;
  }

  /** Runs `fn` as one in-flight page. */
  async track<T>(url: string, sourceId: string, fn: () => Promise<T>): Promise<T> {
    const id = this.#next++;
    this.#started.set(id, { url, sourceId, at: performance.now() });
    try {
      return await fn();
    } finally {
      this.#started.delete(id);
    }
  }

  /** Starts the timer (when the logger takes heartbeats); `stop` ends it. */
  start(): void {
    const { heartbeat } = this.#log;
    const every = this.#log.heartbeatMs ?? DEFAULT_HEARTBEAT_MS;
    if (heartbeat === undefined || !(every > 0)) return;
    this.#timer = setInterval(() => {
      const beat = this.beat();
      if (beat !== undefined) heartbeat.call(this.#log, beat);
    }, every);
    // A heartbeat never keeps a process alive on its own.
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** The slowest page in flight now, or undefined when none is. */
  beat(): Heartbeat | undefined {
    let slowest: { url: string; sourceId: string; at: number } | undefined;
    for (const p of this.#started.values())
      if (slowest === undefined || p.at < slowest.at) slowest = p;
    if (slowest === undefined) return undefined;
    const { done, total } = this.#progress();
    return {
      inFlight: this.#started.size,
      slowestUrl: slowest.url,
      slowestSource: slowest.sourceId,
      slowestMs: Math.round(performance.now() - slowest.at),
      done,
      total,
    };
  }
}
