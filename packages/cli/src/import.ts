import { open, readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { isRagfreshError, reasonLine } from '@ragfresh/core';
import {
  type CheckpointPolicy,
  decideCheckpoint,
  type ExportCoverage,
  type ExportFormat,
  FileCheckpointStore,
  futureRefusal,
  type ImportReport,
  importRows,
  MAX_FUTURE_SKEW_MS,
  type ParsedExport,
  parseExport,
  readExport,
  reconcileInventory,
  type WebScraperMapping,
} from '@ragfresh/engine/import';
import { loadConfig } from './config.js';
import { EXIT } from './exit.js';
import {
  coverageOf,
  formatOf,
  type ImportArgs,
  mappingOf,
  parseImportArgs,
  positiveInt,
  sourceOf,
  UsageError,
} from './import-args.js';
import { createLogger } from './log.js';
import type { Runtime } from './runtime.js';

type Print = (s: string) => void;

async function openInput(file: string): Promise<AsyncIterable<Uint8Array>> {
  if (file === '-') return process.stdin;
  const fail = () =>
    new UsageError(`cannot read ${file}; give a readable export file or - for stdin.`);
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(resolve(file), 'r');
  } catch {
    throw fail();
  }
  if ((await handle.stat()).isDirectory()) {
    await handle.close();
    throw fail();
  }
  return handle.createReadStream({ highWaterMark: 1 << 20 });
}

async function readInput(file: string): Promise<string> {
  if (file === '-') {
    const chunks: Buffer[] = [];
    for await (const c of process.stdin) chunks.push(c as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  }
  try {
    return await readFile(resolve(file), 'utf8');
  } catch {
    throw new UsageError(`cannot read ${file}; give a readable export file or - for stdin.`);
  }
}

export function renderImport(r: ImportReport): string {
  const c = r.counts;
  const lines = [
    `imported ${c.rows} rows into ${r.sourceId}: ${c.published} published, ${c.unchanged} unchanged, ${c.observed} observed, ${c.stale} stale, ${c.refused} refused, ${c.unreadable} unreadable, ${c.review} to review, ${c.deletionProposed} deletion proposals, ${c.ignored} ignored, ${c.rejected} quarantined; ${c.chunksEmbedded} chunks embedded.`,
    `coverage: ${r.coverage.complete ? 'complete' : `partial (${r.coverage.reasons.join('; ')})`}`,
  ];
  const refused = Object.entries(r.refusedBy).sort(([a], [b]) => (a < b ? -1 : 1));
  if (refused.length > 0) lines.push(`refused: ${refused.map(([k, n]) => `${k} ${n}`).join(', ')}`);
  for (const g of r.duplicateGroups)
    lines.push(`duplicate group ${g.id}: ${g.documents.map((d) => d.url).join(', ')}`);
  for (const e of r.events)
    lines.push(
      `  ${e.event.padEnd(18)} ${e.url}${e.reasons.length > 0 ? `  (${e.reasons.map(reasonLine).join('; ')})` : ''}`,
    );
  if (r.eventsOmitted > 0) lines.push(`  ... ${r.eventsOmitted} more row events not listed`);
  for (const u of r.unreadable) lines.push(`  unreadable         row ${u.line}  (${u.reason})`);
  if (c.unreadable > r.unreadable.length)
    lines.push(`  ... ${c.unreadable - r.unreadable.length} more unreadable records not listed`);
  return lines.join('\n');
}

/** One line for an export none of whose records could be read (exit code 2). */
function nothingReadable(r: ImportReport, file: string, format: string): string {
  const first = r.unreadable[0];
  return `import: none of the ${r.counts.rows} records of ${file === '-' ? 'stdin' : file} is a readable ${format} row${first === undefined ? '' : ` (row ${first.line}: ${first.reason})`}; check --format and the file.`;
}

async function importCommand(
  rt: Runtime,
  v: ImportArgs,
  file: string | undefined,
  print: Print,
): Promise<number> {
  const source = sourceOf(rt.config, v.source);
  const checkpoints = new FileCheckpointStore(join(rt.config.dataDir, 'imports'));
  if (v['show-checkpoint'] === true) {
    const c = await checkpoints.get(source.id);
    print(
      c === undefined ? `no checkpoint for ${source.id}` : v.json ? JSON.stringify(c) : c.since,
    );
    return EXIT.ok;
  }
  if (file === undefined)
    throw new UsageError(
      'import needs a file (or - for stdin); e.g. ragfresh import --source docs delta.jsonl.',
    );
  const policy = v.checkpoint as CheckpointPolicy;
  if (policy !== 'never' && policy !== 'complete-coverage')
    throw new UsageError(
      `--checkpoint ${String(v.checkpoint)} is unknown; use never or complete-coverage.`,
    );
  const fetchedAt = v['fetched-at'];
  if (fetchedAt !== undefined && Number.isFinite(Date.parse(fetchedAt))) {
    // Every row without a time of its own would be refused: say it once, before anything runs.
    if (futureRefusal(new Date(Date.parse(fetchedAt)).toISOString(), new Date()) !== undefined)
      throw new UsageError(
        `--fetched-at ${fetchedAt} is more than ${MAX_FUTURE_SKEW_MS / 60_000} minutes ahead of this machine's clock; give the time the crawl fetched the pages.`,
      );
  }
  const format = formatOf(v.format);
  const stream = readExport(await openInput(file), {
    format,
    webscraper: mappingOf(v.map),
    ...(v['job-status'] === undefined ? {} : { jobStatus: v['job-status'] }),
  });
  const ctx = rt.context({ batchSize: positiveInt(v['batch-size'], '--batch-size', 25) });
  const report = await importRows(ctx, {
    source,
    rows: stream.items,
    label: file === '-' ? 'stdin' : file,
    coverage: () => coverageOf({ format, coverage: stream.coverage() }, v.coverage),
    chunking: v.rechunk === true ? 'rechunk' : 'provided',
    ...(v['fetched-at'] === undefined ? {} : { fetchedAt: v['fetched-at'] }),
  });
  const { counts } = report;
  if (counts.rows > 0 && counts.unreadable === counts.rows) {
    if (v.json) print(JSON.stringify({ report, unreadable: report.unreadable }, null, 2));
    process.stderr.write(`ragfresh: ${nothingReadable(report, file, format)}\n`);
    return EXIT.usage;
  }
  const previous = await checkpoints.get(source.id);
  const decision = decideCheckpoint({
    policy,
    coverage: report.coverage,
    notImported: counts.refused + counts.unreadable,
    ...(previous === undefined ? {} : { previous }),
    ...(v.since === undefined ? {} : { crawledSince: v.since }),
    ...(v['crawl-started-at'] === undefined ? {} : { crawlStartedAt: v['crawl-started-at'] }),
    ...(v.overlap === undefined ? {} : { overlapMs: positiveInt(v.overlap, '--overlap', 1) }),
  });
  if (decision.advance)
    await checkpoints.put({
      sourceId: source.id,
      since: decision.since!,
      advancedAt: ctx.nowIso(),
      basis: `crawl started ${v['crawl-started-at']}, complete coverage`,
    });
  if (v.json)
    print(JSON.stringify({ report, unreadable: report.unreadable, checkpoint: decision }, null, 2));
  else {
    print(renderImport(report));
    print(
      decision.advance
        ? `checkpoint: advanced to ${decision.since}`
        : `checkpoint: kept (${decision.reasons.join('; ')})`,
    );
  }
  // Rows the export holds but the import did not take: a scheduled job must notice.
  return counts.refused + counts.unreadable > 0 ? EXIT.rowsRefused : EXIT.ok;
}

/** Every URL an inventory lists: an export of any format, or a plain list (one URL a line, or a JSON array of strings). */
function inventoryUrls(
  text: string,
  format: ExportFormat,
  map: WebScraperMapping,
  jobStatus: string | undefined,
): { urls: string[]; parsed?: ParsedExport } {
  const t = text.trim();
  if (t.startsWith('[') && /^\[\s*("|\])/.test(t)) return { urls: JSON.parse(t) as string[] };
  if (!t.startsWith('[') && !t.startsWith('{') && format !== 'webscraper')
    return {
      urls: t
        .split(/\r?\n/)
        .map((l) => l.trim())
        .filter((l) => l !== '' && !l.startsWith('#')),
    };
  const parsed = parseExport(text, {
    format,
    webscraper: map.text === undefined ? { ...map, text: ['-'] } : map,
    ...(jobStatus === undefined ? {} : { jobStatus }),
  });
  return { urls: parsed.rows.map((r) => r.url), parsed };
}

async function reconcileCommand(rt: Runtime, v: ImportArgs, print: Print): Promise<number> {
  const source = sourceOf(rt.config, v.source);
  if (v.inventory === undefined)
    throw new UsageError(
      'reconcile needs --inventory <file>: the URLs that exist, from a crawl with complete coverage.',
    );
  const { urls, parsed } = inventoryUrls(
    await readInput(v.inventory),
    formatOf(v.format),
    mappingOf(v.map),
    v['job-status'],
  );
  // A plain list proves nothing by itself: the user states its coverage explicitly.
  const coverage: ExportCoverage =
    parsed === undefined
      ? v.coverage === 'complete'
        ? { complete: true, reasons: [] }
        : {
            complete: false,
            reasons: [
              'a URL list proves no coverage; pass --coverage complete if it is the whole site',
            ],
          }
      : coverageOf(parsed, v.coverage);
  const ctx = rt.context();
  const r = await reconcileInventory(ctx, { source, urls, coverage, label: v.inventory });
  if (v.json) print(JSON.stringify(r, null, 2));
  else if (r.refused !== undefined) {
    print(
      `nothing nominated: the inventory's coverage is partial (${r.refused.join('; ')}); ${r.missing.length} live documents are not in it.`,
    );
    return EXIT.usage;
  } else {
    print(
      `${r.missing.length} live documents of ${r.sourceId} are not in the inventory (${r.listed} listed); ${r.nominated} nominated for deletion review (ragfresh review list).`,
    );
    for (const m of r.missing) print(`  missing  ${m.url}`);
  }
  return r.refused === undefined ? EXIT.ok : EXIT.usage;
}

/** `ragfresh import|reconcile|serve`: loads the config and runtime, runs the command, closes. */
export async function runImportCommand(argv: string[]): Promise<number> {
  const print: Print = (s) => process.stdout.write(`${s}\n`);
  let parsed: ReturnType<typeof parseImportArgs>;
  try {
    parsed = parseImportArgs(argv);
  } catch (err) {
    process.stderr.write(`ragfresh: ${(err as Error).message}; see \`ragfresh --help\`.\n`);
    return EXIT.usage;
  }
  const { values: v, positionals } = parsed;
  const [command, file] = positionals;
  const log = createLogger({ quiet: v.quiet === true, ...(v.json ? { json: true } : {}) });
  try {
    const config = await loadConfig(v.config);
    if (command === 'serve') {
      const { serveCommand } = await import('./serve.js');
      return await serveCommand(config, v, log, print);
    }
    if (v.source !== undefined) sourceOf(config, v.source);
    const { openRuntime } = await import('./runtime.js');
    const rt = await openRuntime(config, { log, role: 'import' });
    try {
      return command === 'reconcile'
        ? await reconcileCommand(rt, v, print)
        : await importCommand(rt, v, file, print);
    } finally {
      await rt.close();
    }
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`ragfresh: ${err.message}\n`);
      return EXIT.usage;
    }
    // Bad input is a usage error: one line, nothing written.
    if (isRagfreshError(err, 'INVALID_ARGUMENT')) {
      process.stderr.write(`ragfresh: ${err.message.replace(/^\[ragfresh\] (\[\w+\] )?/, '')}\n`);
      return EXIT.usage;
    }
    throw err;
  }
}
