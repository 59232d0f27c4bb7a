import { spaceLabel } from '@ragfresh/core';
import { migrateEmbeddingSpace, type SpaceMigrationProgress } from '@ragfresh/engine/migrate';
import type { ParsedArgs } from './args.js';
import type { ResolvedConfig } from './config.js';
import { formatDuration } from './duration.js';
import { EXIT } from './exit.js';
import type { Logger } from './log.js';
import { openRuntime } from './runtime.js';

/** Non-TTY progress lines at most this often. */
const PROGRESS_EVERY_MS = 2_000;

function positiveInt(raw: unknown, flag: string): number | undefined | string {
  if (raw === undefined) return undefined;
  const n = Number(raw);
  return Number.isSafeInteger(n) && n >= 1
    ? n
    : `${flag} ${String(raw)} is not a positive integer; give one, e.g. ${flag} 64.`;
}

/**
 * `ragfresh migrate embeddings`: re-embeds the index from its stored chunk texts into the
 * configured embeddings' space (docs/embeddings.md). `--dry-run` counts chunks and tokens
 * (cl100k_base) and prices them with `--price` (per million tokens).
 */
export async function migrateCommand(
  config: ResolvedConfig,
  values: ParsedArgs['values'],
  io: { log: Logger; print: (s: string) => void; usage: (line: string) => number },
): Promise<number> {
  const price = values.price === undefined ? undefined : Number(values.price);
  if (price !== undefined && !(Number.isFinite(price) && price >= 0))
    return io.usage(
      `--price ${String(values.price)} is not a price; give dollars per million tokens, e.g. --price 0.02.`,
    );
  const batchSize = positiveInt(values['batch-size'], '--batch-size');
  const concurrency = positiveInt(values.concurrency, '--concurrency');
  if (typeof batchSize === 'string') return io.usage(batchSize);
  if (typeof concurrency === 'string') return io.usage(concurrency);
  const json = values.json === true;
  const quiet = values.quiet === true || json;
  let last = 0;
  const progress = (p: SpaceMigrationProgress): void => {
    if (quiet) return;
    const now = performance.now();
    const final = p.embedded >= p.total;
    if (!process.stderr.isTTY && !final && now - last < PROGRESS_EVERY_MS) return;
    last = now;
    const line = `migrate: ${p.embedded}/${p.total} chunks embedded · ${p.retries} retried batches · ${formatDuration(p.elapsedMs)} elapsed · ETA ${formatDuration(p.etaMs)}`;
    process.stderr.write(
      process.stderr.isTTY ? `\r\x1b[2K${line}${final ? '\n' : ''}` : `${line}\n`,
    );
  };
  const rt = await openRuntime(config, { log: io.log, role: 'migrate' });
  try {
    const r = await migrateEmbeddingSpace(rt, {
      dryRun: values['dry-run'] === true,
      ...(price === undefined ? {} : { pricePerMillionTokens: price }),
      ...(batchSize === undefined ? {} : { batchSize }),
      ...(concurrency === undefined ? {} : { concurrency }),
      onProgress: progress,
    });
    if (json) {
      io.print(JSON.stringify(r));
      return EXIT.ok;
    }
    const from = r.from === undefined ? '(none)' : spaceLabel(r.from);
    const cost =
      r.estimatedCost === undefined
        ? ''
        : `, estimated cost $${r.estimatedCost.toFixed(4)} at $${price}/1M tokens`;
    const where = r.namespace === 'same' ? 'the same namespace' : `namespace __${r.namespace}`;
    const dropped = r.retiredNamespaceDropped === true ? ', the namespace they left dropped' : '';
    if (r.outcome === 'already-in-space') {
      io.print(
        `the index is already in space ${spaceLabel(r.to)}; nothing to migrate${r.retiredChunks > 0 ? ` (retired ${r.retiredChunks} chunks of the previous space)` : ''}${dropped}.`,
      );
    } else if (r.outcome === 'dry-run') {
      io.print(
        `dry run: ${r.documents} documents, ${r.chunks} chunks, ${r.tokens} tokens (cl100k_base) to re-embed from ${from} into ${spaceLabel(r.to)} in ${where}${cost}; nothing was embedded or written.`,
      );
    } else {
      io.print(
        `migrated ${r.documents} documents (${r.chunks} chunks, ${r.embedded} embedded, ${r.retries} batches retried) from ${from} into ${spaceLabel(r.to)} in ${where}; readers moved at epoch ${r.epoch ?? '-'}; ${r.retiredChunks} chunks of the old space retired${dropped}.`,
      );
    }
    return EXIT.ok;
  } finally {
    await rt.close();
  }
}
