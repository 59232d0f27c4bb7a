#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { errorMessage, isRagfreshError } from '@ragfresh/core';
import {
  initCommand,
  inspectCommand,
  queryCommand,
  refreshCommand,
  reviewCommand,
  statusCommand,
} from './commands.js';
import { loadConfig } from './config.js';
import { runDemo } from './demo.js';
import { createLogger } from './log.js';
import { openRuntime } from './runtime.js';
import { EXIT } from './status.js';
import { watch } from './watch.js';

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

options: --config <file>  --json  --quiet`;

async function main(argv: string[]): Promise<number> {
  const print = (s: string) => process.stdout.write(`${s}\n`);
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
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
  } catch (err) {
    process.stderr.write(`ragfresh: ${errorMessage(err)}; see \`ragfresh --help\`.\n`);
    return EXIT.usage;
  }
  const { values, positionals } = parsed;
  const [command, ...rest] = positionals;
  if (values.help === true || command === undefined || command === 'help') {
    print(USAGE);
    return command === undefined && values.help !== true ? EXIT.usage : EXIT.ok;
  }
  const json = values.json === true;
  const log = createLogger({ quiet: values.quiet === true, ...(json ? { json: true } : {}) });
  if (command === 'init') return initCommand(process.cwd(), print);
  if (command === 'demo') return runDemo({ print, log });
  const known = ['refresh', 'watch', 'status', 'review', 'query', 'inspect', 'reextract'];
  if (!known.includes(command)) {
    process.stderr.write(
      `ragfresh: unknown command "${command}"; run \`ragfresh --help\` for the list.\n`,
    );
    return EXIT.usage;
  }
  const config = await loadConfig(values.config as string | undefined);
  const readOnly =
    command === 'status' ||
    command === 'query' ||
    command === 'inspect' ||
    (command === 'review' && (rest[0] ?? 'list') === 'list');
  const rt = await openRuntime(config, { log, readOnly });
  try {
    switch (command) {
      case 'refresh':
        return await refreshCommand(
          rt,
          {
            all: values.all === true,
            ...(values.source === undefined ? {} : { sources: values.source as string[] }),
            json,
          },
          print,
        );
      case 'watch': {
        const port =
          values['metrics-port'] ??
          (config.metricsPort === undefined ? undefined : String(config.metricsPort));
        if (port !== undefined && !/^\d+$/.test(String(port))) {
          process.stderr.write(
            `ragfresh: --metrics-port ${String(port)} is not a port number; give an integer.\n`,
          );
          return EXIT.usage;
        }
        return await watch(rt, {
          log,
          print,
          ...(port === undefined ? {} : { metricsPort: Number(port) }),
        });
      }
      case 'status':
        return await statusCommand(rt, { json }, print);
      case 'review':
        return await reviewCommand(
          rt,
          rest[0],
          rest[1],
          { by: String(values.by), json, all: values.all === true },
          print,
        );
      case 'query': {
        const question = rest.join(' ').trim();
        const k = Number(values.k);
        if (question === '' || !Number.isInteger(k) || k < 1) {
          process.stderr.write(
            'ragfresh: query needs a question and a positive -k; e.g. ragfresh query "how much does it cost" -k 5.\n',
          );
          return EXIT.usage;
        }
        return await queryCommand(rt, question, { k, json }, print);
      }
      case 'inspect':
        if (rest[0] === undefined) {
          process.stderr.write(
            'ragfresh: inspect needs a URL; e.g. ragfresh inspect https://docs.example.org/pricing.\n',
          );
          return EXIT.usage;
        }
        return await inspectCommand(rt, rest[0], { json }, print);
      case 'reextract': {
        const r = await rt.engine.reextract();
        print(
          `re-extracted ${r.documents} documents from raw snapshots; ${r.republished} new versions published; ${r.counts.chunksEmbedded} chunks embedded.`,
        );
        return EXIT.ok;
      }
    }
    return EXIT.usage;
  } finally {
    await rt.close();
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
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
  },
);
