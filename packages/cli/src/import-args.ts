// The flags of `import`, `reconcile` and `serve` and their checks, shared by the commands (the
// import command and the webhook server read the same options the same way).
import { parseArgs } from 'node:util';
import type {
  ExportCoverage,
  ExportFormat,
  ParsedExport,
  WebScraperMapping,
} from '@ragfresh/engine/import';
import { EXPORT_FORMATS } from '@ragfresh/engine/import';
import type { ResolvedConfig, ResolvedSource } from './config.js';

/** Bad flags or arguments of `import`, `reconcile` and `serve`: one line, exit 2. */
export class UsageError extends Error {}

/** Options shared by `import`, `reconcile` and `serve` (bin.ts hands these commands their own argv). */
export function parseImportArgs(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      config: { type: 'string' },
      json: { type: 'boolean', default: false },
      quiet: { type: 'boolean', default: false },
      source: { type: 'string' },
      format: { type: 'string', default: 'crawler' },
      map: { type: 'string', multiple: true },
      'job-status': { type: 'string' },
      rechunk: { type: 'boolean', default: false },
      'fetched-at': { type: 'string' },
      coverage: { type: 'string' },
      checkpoint: { type: 'string', default: 'never' },
      since: { type: 'string' },
      'crawl-started-at': { type: 'string' },
      overlap: { type: 'string' },
      'batch-size': { type: 'string' },
      inventory: { type: 'string' },
      'show-checkpoint': { type: 'boolean', default: false },
      port: { type: 'string' },
      host: { type: 'string' },
      'secret-env': { type: 'string' },
      'apify-base-url': { type: 'string' },
      'apify-token-env': { type: 'string' },
      'webscraper-base-url': { type: 'string' },
      'webscraper-token-env': { type: 'string' },
      'max-body': { type: 'string' },
      'page-size': { type: 'string' },
    },
  });
}

export type ImportArgs = ReturnType<typeof parseImportArgs>['values'];

export function sourceOf(config: ResolvedConfig, id: string | undefined): ResolvedSource {
  if (id === undefined)
    throw new UsageError('--source <id> is required; name the source the export belongs to.');
  const source = config.sources.find((s) => s.id === id);
  if (source === undefined)
    throw new UsageError(
      `source "${id}" is not in the config; use one of ${config.sources.map((s) => s.id).join(', ')}.`,
    );
  return source;
}

export function formatOf(v: string | undefined): ExportFormat {
  const f = (v ?? 'crawler') as ExportFormat;
  if (!EXPORT_FORMATS.includes(f))
    throw new UsageError(`--format ${v} is unknown; use one of ${EXPORT_FORMATS.join(', ')}.`);
  return f;
}

/** `--map url=page-href --map text=body`: Web Scraper columns by role. */
export function mappingOf(maps: readonly string[] | undefined): WebScraperMapping {
  const out: { url?: string; text?: string[]; title?: string; loadedTime?: string } = {};
  for (const m of maps ?? []) {
    const [role, column] = m.split('=', 2);
    if (column === undefined || column === '')
      throw new UsageError(`--map ${m} is not role=column; e.g. --map text=body.`);
    if (role === 'text') out.text = [...(out.text ?? []), column];
    else if (role === 'url' || role === 'title' || role === 'loadedTime') out[role] = column;
    else throw new UsageError(`--map ${role} is unknown; map url, text, title or loadedTime.`);
  }
  return out;
}

export function positiveInt(v: string | undefined, flag: string, fallback: number): number {
  if (v === undefined) return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1)
    throw new UsageError(`${flag} ${v} is not a positive integer.`);
  return n;
}

/** Coverage is what the export proves, unless the user states the explicit policy `--coverage complete`. */
export function coverageOf(
  parsed: Pick<ParsedExport, 'format' | 'coverage'>,
  flag: string | undefined,
): ExportCoverage {
  if (flag === undefined) return parsed.coverage;
  if (flag !== 'complete' && flag !== 'partial')
    throw new UsageError(`--coverage ${flag} is unknown; use complete or partial.`);
  if (flag === 'partial') return { complete: false, reasons: ['--coverage partial'] };
  // An export that shows it stopped early stays partial whatever the flag says.
  if (!parsed.coverage.complete && parsed.format !== 'crawler' && parsed.format !== 'apify-wcc')
    return parsed.coverage;
  return { complete: true, reasons: [] };
}

/**
 * The export as a byte stream (never read whole): a file, or stdin for `-`. A file that cannot
 * be opened, or a directory, is a usage error before anything is read.
 */
export { UsageError as ImportUsageError };
