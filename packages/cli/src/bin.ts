#!/usr/bin/env node
import { type ParsedArgs, parse } from './args.js';
import { EXIT } from './exit.js';

// This file imports nothing but node:util: `--help` and argument errors answer before any
// store driver, tokenizer or HTML parser is loaded. Commands load what they use (run.ts).

const USAGE = `ragfresh — keep a RAG index fresh from public web pages, and prove it.

usage: ragfresh <command> [options]

commands:
  init                       write a starter ragfresh.config.ts
  refresh [--all] [--source id]   one pass over the sources that are due
  watch [--metrics-port n]   keep refreshing on schedule (SIGINT/SIGTERM finish in-flight work)
  worker [--role pages|publish|both]   take page batches / publish batches from BullMQ (queue config)
  watch --distributed        enqueue due sources as URL batches for the workers
  status [--json]            per-source freshness table, review queue, gone evidence (exit codes below)
  review list [--all]|show <id>     the review queue; show: one item with its evidence history
  review approve|accept|reject <id...> [--source id] [--reason r] [--all-withdrawn] [--by name]
  verify [--repair]          two-way state/store reconciliation; --repair republishes from raw
                             snapshots (no refetch) and removes orphan chunks
  recover                    rebuild a lost state from the store's own metadata (a corrupt
                             state file is moved aside first)
  contracts                  publish-contract thresholds measured on each source's history
  sources [--json]           the source register: owner, permission basis, licence, use, access,
                             retention; exit 1 when a source lacks an owner or a permission basis
  query "question" [-k n] [--no-collapse] [--access g1,g2]   search the current view, with
                             Source / Fetched / Section headers; copies of a passage under several
                             URLs are one result citing each URL (--no-collapse: one per copy);
                             public chunks only, plus those of the --access groups
  query … --as-of <time>     answer from the versions current then (within the retention)
  inspect <url> [--as-of <time>]   version history of one document, with reasons (as-of: the
                             version current then)
  remove <url>|--prefix p|--host h|--source id --reason r [--by name]   removal request: out
                             of the view in one epoch, then purged everywhere; a tombstone
                             blocks the URL until \`remove --undo <url> --by name\`
  audit [<url>]              the governance audit log, hash chain verified (broken: exit 1)
  gc [--dry-run]             retention: prune raw snapshots and retired versions past it
  eval --questions q.jsonl [--against <epoch>] [--access g1,g2] [--json [report.json]]
                             hit@1, hit@5, MRR of your questions on the current view (vs an epoch)
  reextract [--source id]    re-run extraction from stored raw snapshots (no network)
  reextract --republish [--source id]
                             write again, in one epoch move, the current documents whose
                             chunks lack rf_access or rf_space (a store written before them)
  migrate embeddings [--dry-run] [--price usd-per-1M-tokens] [--batch-size n] [--concurrency n]
                             re-embed the index from its stored chunk texts into the configured
                             embeddings (no refetch), readers moved in one epoch move
  demo                       offline end-to-end demo on a simulated web
  import --source id <file|->  import a crawler export (see docs/import.md)
  reconcile --source id --inventory <file>   nominate live documents missing from an inventory
  serve --source id [--port n]  webhook receiver (POST /hooks/apify, /hooks/webscraper)
  ui [--port n] [--host h] [--allowed-host name]... [--by name]
                             local dashboard: sources, review queue with diffs, documents, runs
  mcp [--http <port>] [--access g1,g2]   read-only MCP tools (search, get_document, freshness,
                             explain) on stdio, or Streamable HTTP on 127.0.0.1 with a bearer
                             token (docs/mcp.md)

options: --config <file>  --json  --quiet

exit codes: 0 healthy, 1 failure (also STORE_LOST: the store is behind the state; STATE_CORRUPT:
run \`ragfresh recover\`), 2 usage/config error, 3 objective violated (also a source never
indexed, an empty index), 4 quarantined, 5 review pending, 6 another run holds the lease,
7 import rows refused, 8 refresh coverage below gates.minCoverage (default 0.9; wins over 3-5).
A closed pipe (\`| head -1\`) ends quietly with the command's own code.`;

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
  'migrate',
  'verify',
  'recover',
  'contracts',
  'sources',
  'import',
  'reconcile',
  'serve',
  'eval',
  'ui',
  'remove',
  'audit',
  'gc',
  'mcp',
] as const;

/**
 * The oldest Node the CLI runs on: type stripping on by default (a `.ts` config), module
 * hooks (`module.registerHooks`: a config's `ragfresh` import) and `process.execve`.
 * The state store's `node:sqlite` needs 22.13; the packages' `engines` say so.
 */
export const MIN_NODE = [22, 18] as const;

/** One line when this Node is too old, else undefined. */
export function nodeVersionProblem(version: string = process.versions.node): string | undefined {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  if (major > MIN_NODE[0] || (major === MIN_NODE[0] && minor >= MIN_NODE[1])) return undefined;
  return `ragfresh: needs Node >= ${MIN_NODE.join('.')}, found ${version}; in a clone of the repo run \`npx -y pnpm@10 ragfresh <command>\` (its pinned Node 22), elsewhere install Node 22 (e.g. \`npx -y node@22 "$(command -v ragfresh)" <command>\`).`;
}

/** Commands that do the heavy work: re-executed once with bounded memory (process-tuning.ts). */
const HEAVY = new Set([
  'refresh',
  'watch',
  'demo',
  'reextract',
  'migrate',
  'import',
  'serve',
  'worker',
  'verify',
  'recover',
]);

async function tuneHeavy(command: string | undefined, argv: readonly string[]): Promise<void> {
  if (
    command === undefined ||
    !HEAVY.has(command) ||
    argv.includes('--help') ||
    argv.includes('-h')
  )
    return;
  // Replaces this process when it can (same pid and stdio); returns when it cannot.
  (await import('./process-tuning.js')).reexecTuned();
}

async function main(argv: string[]): Promise<number> {
  const tooOld = nodeVersionProblem(
    process.env.RAGFRESH_NODE_VERSION_CHECK ?? process.versions.node,
  );
  if (tooOld !== undefined) {
    process.stderr.write(`${tooOld}\n`);
    return EXIT.failure;
  }
  // Commands parsed by their own modules (import, serve, worker, watch --distributed) are
  // tuned here, before those load anything; the others right after parsing, below.
  await tuneHeavy(argv[0], argv);
  if (['import', 'reconcile', 'serve'].includes(argv[0] ?? '') && !argv.includes('--help'))
    return (await import('./import.js')).runImportCommand(argv);
  // BullMQ and Redis load only for the scale-out commands (docs/scale-out.md).
  if (argv[0] === 'worker' || (argv[0] === 'watch' && argv.includes('--distributed')))
    return (await import('./worker.js')).runWorkerCommand(argv);
  // The dashboard's server and diff libraries load only for `ui`.
  if (argv[0] === 'ui' && !argv.includes('--help'))
    return (await import('./ui/command.js')).runUiCommand(argv);
  // The MCP SDK loads only for `mcp`.
  if (argv[0] === 'mcp' && !argv.includes('--help'))
    return (await import('./mcp.js')).runMcpCommand(argv);
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
  await tuneHeavy(command, argv);
  const { runCommand } = await import('./run.js');
  return runCommand(parsed);
}

async function report(err: unknown): Promise<void> {
  const { errorLine, isRagfreshError } = await import('@ragfresh/core');
  process.exitCode = isRagfreshError(err, 'INVALID_CONFIG')
    ? EXIT.usage
    : isRagfreshError(err, 'LEASE_HELD')
      ? EXIT.busy
      : EXIT.failure;
  // An unexpected failure keeps its stack: it is a bug to report, not a line to act on.
  const line = isRagfreshError(err)
    ? errorLine(err)
    : `ragfresh: unexpected failure: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`;
  process.stderr.write(`${line}\n`);
}

/**
 * A reader that went away (`ragfresh inspect … | head -1`) is not a failure: the first EPIPE
 * on stdout or stderr mutes that stream, and the command finishes what it was doing (a
 * publication, a lease release) and exits with its own code — 0 for a read — with no trace.
 */
function quietOnEpipe(stream: NodeJS.WriteStream): void {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err;
    stream.write = (() => true) as typeof stream.write;
  });
}

quietOnEpipe(process.stdout);
quietOnEpipe(process.stderr);

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => report(err),
);
