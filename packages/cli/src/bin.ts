#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { EXIT } from './exit.js';

// This file imports nothing but node:util: `--help` and argument errors answer before any
// store driver, tokenizer or HTML parser is loaded. Commands load what they use (run.ts).

const USAGE = `ragfresh — keep a RAG index fresh from public web pages, and prove it.

usage: ragfresh <command> [options]

commands:
  init                       write a starter ragfresh.config.ts
  refresh [--all] [--source id]   one pass over the sources that are due
  watch [--metrics-port n]   keep refreshing on schedule (SIGINT/SIGTERM finish in-flight work)
  status [--json]            per-source freshness table; exit 3 objective violated, 4 quarantined
  review list|approve <id>|reject <id> [--by name]
  query "question" [-k n]    search the current view, with Source / Fetched / Section headers
  inspect <url>              version history of one document, with reasons
  reextract                  re-run extraction from stored raw snapshots (no network)
  demo                       offline end-to-end demo on a simulated web
  import --source id <file|->  import a crawler export (see docs/import.md)
  reconcile --source id --inventory <file>   nominate live documents missing from an inventory
  serve --source id [--port n]  webhook receiver (POST /hooks/apify, /hooks/webscraper)

options: --config <file>  --json  --quiet`;

export const COMMANDS = [
  'init',
  'demo',
  'refresh',
  'watch',
  'status',
  'review',
  'query',
  'inspect',
  'reextract',
  'import',
  'reconcile',
  'serve',
] as const;

function parse(argv: string[]) {
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
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
}

export type ParsedArgs = ReturnType<typeof parse>;

async function main(argv: string[]): Promise<number> {
  if (['import', 'reconcile', 'serve'].includes(argv[0] ?? '') && !argv.includes('--help'))
    return (await import('./import.js')).runImportCommand(argv);
  let parsed: ParsedArgs;
  try {
    parsed = parse(argv);
  } catch (err) {
    process.stderr.write(`ragfresh: ${(err as Error).message}; see \`ragfresh --help\`.\n`);
    return EXIT.usage;
  }
  const [command] = parsed.positionals;
  if (parsed.values.help === true || command === undefined || command === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return command === undefined && parsed.values.help !== true ? EXIT.usage : EXIT.ok;
  }
  if (!(COMMANDS as readonly string[]).includes(command)) {
    process.stderr.write(
      `ragfresh: unknown command "${command}"; run \`ragfresh --help\` for the list.\n`,
    );
    return EXIT.usage;
  }
  const { runCommand } = await import('./run.js');
  return runCommand(parsed);
}

async function report(err: unknown): Promise<void> {
  const { isRagfreshError } = await import('@ragfresh/core');
  if (isRagfreshError(err, 'INVALID_CONFIG')) {
    process.stderr.write(`${err.message.replace(/^\[ragfresh\] \[config\] /, 'ragfresh: ')}\n`);
    process.exitCode = EXIT.usage;
    return;
  }
  if (isRagfreshError(err)) {
    process.stderr.write(`${err.message} (code ${err.code})\n`);
    process.exitCode = EXIT.failure;
    return;
  }
  process.stderr.write(
    `ragfresh: unexpected failure: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exitCode = EXIT.failure;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => report(err),
);
