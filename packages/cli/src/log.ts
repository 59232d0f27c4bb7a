import type { EngineLogger, Heartbeat } from '@ragfresh/engine';
import { formatDuration } from './duration.js';

/** What a progress report may carry beyond pages done (the engine's per-source counts). */
export interface ProgressCounts {
  readonly notModified?: number;
  readonly published?: number;
  readonly fetchErrors?: number;
}

/** Human progress on a TTY, JSON lines otherwise (cron, CI, log shippers). */
export interface Logger extends EngineLogger {
  progress(label: string, done: number, total: number, counts?: ProgressCounts): void;
  heartbeat(beat: Heartbeat): void;
  readonly heartbeatMs: number;
}

/** Non-TTY progress lines come at most this often (ms); `RAGFRESH_PROGRESS_INTERVAL_MS` overrides. */
export const PROGRESS_INTERVAL_MS = 10_000;
/** While pages are in flight, the slowest is named this often (ms); `RAGFRESH_HEARTBEAT_MS` overrides. */
export const HEARTBEAT_MS = 10_000;
/** A TTY line is redrawn at most this often (ms). */
const TTY_REDRAW_MS = 100;

export interface LoggerOptions {
  readonly json?: boolean;
  readonly quiet?: boolean;
  readonly stream?: NodeJS.WriteStream;
  /** Non-TTY progress interval; default `RAGFRESH_PROGRESS_INTERVAL_MS` or 10 s. */
  readonly progressIntervalMs?: number;
  /** Heartbeat period; default `RAGFRESH_HEARTBEAT_MS` or 10 s; 0 turns it off. */
  readonly heartbeatMs?: number;
  readonly now?: () => number;
}

interface SourceProgress {
  done: number;
  total: number;
  counts: ProgressCounts | undefined;
}

function msFromEnv(name: string, fallback: number): number {
  const v = Number(process.env[name]);
  return Number.isFinite(v) && v >= 0 ? v : fallback;
}

/** `docs 12/40 · blog 3/9 · 304 10 · published 2 · errors 1`, the totals first. */
function summary(sources: ReadonlyMap<string, SourceProgress>): {
  text: string;
  fields: Record<string, unknown>;
} {
  let done = 0;
  let total = 0;
  let notModified = 0;
  let published = 0;
  let errors = 0;
  let haveCounts = false;
  const per: Record<string, string> = {};
  for (const [label, p] of sources) {
    done += p.done;
    total += p.total;
    per[label] = `${p.done}/${p.total}`;
    if (p.counts !== undefined) {
      haveCounts = true;
      notModified += p.counts.notModified ?? 0;
      published += p.counts.published ?? 0;
      errors += p.counts.fetchErrors ?? 0;
    }
  }
  const counts = haveCounts ? { notModified, published, errors } : {};
  const parts = [`pages ${done}/${total}`];
  if (sources.size > 1) for (const [label, v] of Object.entries(per)) parts.push(`${label} ${v}`);
  if (haveCounts) parts.push(`304 ${notModified}`, `published ${published}`, `errors ${errors}`);
  return { text: parts.join(' · '), fields: { done, total, sources: per, ...counts } };
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const stream = options.stream ?? process.stderr;
  const json = options.json ?? !stream.isTTY;
  const now = options.now ?? Date.now;
  const interval =
    options.progressIntervalMs ?? msFromEnv('RAGFRESH_PROGRESS_INTERVAL_MS', PROGRESS_INTERVAL_MS);
  const heartbeatMs = options.heartbeatMs ?? msFromEnv('RAGFRESH_HEARTBEAT_MS', HEARTBEAT_MS);
  const sources = new Map<string, SourceProgress>();
  let lastLine = now();
  let lastDraw = 0;
  let progressShown = false;
  const clear = () => {
    if (progressShown) {
      stream.write('\r\x1b[2K');
      progressShown = false;
    }
  };
  const emit = (level: string, event: string, fields: Readonly<Record<string, unknown>> = {}) => {
    if (options.quiet && level === 'info') return;
    if (json) {
      stream.write(
        `${JSON.stringify({ time: new Date().toISOString(), level, event, ...fields })}\n`,
      );
      return;
    }
    clear();
    const detail = Object.entries(fields)
      .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
      .join(' ');
    stream.write(`${level === 'warn' ? '! ' : '  '}${event}${detail === '' ? '' : ` ${detail}`}\n`);
  };
  return {
    info: (e, f) => emit('info', e, f),
    warn: (e, f) => emit('warn', e, f),
    progress(label, done, total, counts) {
      if (options.quiet) return;
      sources.set(label, { done, total, counts });
      const t = now();
      if (json) {
        // Periodic, not per page: a long run shows it is alive, a short one stays quiet.
        if (t - lastLine < interval) return;
        lastLine = t;
        emit('info', 'progress', summary(sources).fields);
        return;
      }
      if (t - lastDraw < TTY_REDRAW_MS && done !== total) return;
      lastDraw = t;
      stream.write(`\r\x1b[2K  ${summary(sources).text}`);
      progressShown = true;
    },
    heartbeatMs,
    heartbeat(beat) {
      if (options.quiet) return;
      if (json) {
        emit('info', 'heartbeat', { ...beat });
        return;
      }
      stream.write(
        `\r\x1b[2K  ${summary(sources).text} · ${beat.inFlight} in flight, slowest ${beat.slowestUrl} ${formatDuration(beat.slowestMs)}`,
      );
      progressShown = true;
    },
    done: () => {
      clear();
      sources.clear();
    },
  };
}

export const silentLogger: Logger = {
  info() {},
  warn() {},
  progress() {},
  heartbeat() {},
  heartbeatMs: 0,
  done() {},
};
