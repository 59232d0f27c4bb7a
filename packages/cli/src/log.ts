import type { EngineLogger } from '@ragfresh/engine';

/** Human progress on a TTY, JSON lines otherwise (cron, CI, log shippers). */
export type Logger = EngineLogger;

export function createLogger(
  options: { json?: boolean; quiet?: boolean; stream?: NodeJS.WriteStream } = {},
): Logger {
  const stream = options.stream ?? process.stderr;
  const json = options.json ?? !stream.isTTY;
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
    progress(label, done, total) {
      if (json || options.quiet) return;
      const width = 24;
      const filled = total === 0 ? width : Math.round((done / total) * width);
      stream.write(
        `\r\x1b[2K  ${label} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total}`,
      );
      progressShown = true;
    },
    done: clear,
  };
}

export const silentLogger: Logger = { info() {}, warn() {}, progress() {}, done() {} };
