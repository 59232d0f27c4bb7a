// The flags of the commands `bin.ts` hands to `run.ts` (refresh, watch, status, query, …).
import { parseArgs } from 'node:util';

export function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      config: { type: 'string' },
      json: { type: 'boolean', default: false },
      quiet: { type: 'boolean', default: false },
      all: { type: 'boolean', default: false },
      source: { type: 'string', multiple: true },
      k: { type: 'string', short: 'k', default: '5' },
      by: { type: 'string', default: process.env.USER ?? 'cli' },
      'metrics-port': { type: 'string' },
      repair: { type: 'boolean', default: false },
      'no-collapse': { type: 'boolean', default: false },
      reason: { type: 'string' },
      'all-withdrawn': { type: 'boolean', default: false },
      questions: { type: 'string' },
      against: { type: 'string' },
      'as-of': { type: 'string' },
      prefix: { type: 'string' },
      host: { type: 'string' },
      undo: { type: 'boolean', default: false },
      'dry-run': { type: 'boolean', default: false },
      republish: { type: 'boolean', default: false },
      /** The reader's groups (`query`, `eval`): public chunks plus these groups' chunks. */
      access: { type: 'string' },
      price: { type: 'string' },
      'batch-size': { type: 'string' },
      concurrency: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
}

export type ParsedArgs = ReturnType<typeof parse>;
