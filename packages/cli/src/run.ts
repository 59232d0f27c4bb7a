import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import {
  InMemoryStateStore,
  isRagfreshError,
  moveCorruptStateAside,
  openStateStore,
  parseAccessList,
  readSpaceRecord,
  type SpaceRecord,
  type StateStore,
} from '@ragfresh/core';
import type { ParsedArgs } from './args.js';
import { loadConfig, type ResolvedConfig } from './config.js';
import { EXIT } from './exit.js';
import { createLogger, type Logger } from './log.js';
import { statusCommand, statusWithQueue } from './status.js';

type Print = (s: string) => void;

const AS_OF_USAGE =
  '--as-of needs a time; e.g. --as-of 2026-11-30T12:00:00Z (ISO 8601, UTC unless it names a zone).';

/** `--as-of`: undefined when absent, null when it is not a time. */
function asOfFlag(value: unknown): Date | undefined | null {
  if (value === undefined) return undefined;
  const t = Date.parse(String(value));
  return Number.isNaN(t) ? null : new Date(t);
}

const usage = (line: string): number => {
  process.stderr.write(`ragfresh: ${line}\n`);
  return EXIT.usage;
};

/**
 * `status` reads; it never creates files. A SQLite state file that does not exist yet is an
 * empty state (every source "never indexed", exit 3), not a reason to create `.ragfresh/`.
 * (The store is looked at only once the state recorded an epoch, through the connector's light
 * probe when it has one; when the store has to be opened, a deleted LanceDB folder is created
 * again, empty, by opening it, and reported STORE_LOST.)
 */
async function openStateForReading(spec: string): Promise<StateStore> {
  const sqlite = /^sqlite:(?:\/\/)?(.*)$/.exec(spec);
  const path = sqlite?.[1];
  if (path !== undefined && path !== '' && path !== ':memory:' && !existsSync(resolve(path)))
    return new InMemoryStateStore();
  return openStateStore(spec);
}

async function status(config: ResolvedConfig, json: boolean, print: Print): Promise<number> {
  const state = await openStateForReading(config.state);
  const opts = {
    json,
    probe: async (stateEpoch: number) =>
      probeStore(config, stateEpoch, await readSpaceRecord(state)),
    printError: (line: string) => process.stderr.write(`${line}\n`),
  };
  try {
    // With a queue config, queue depth too (the queue package and Redis are loaded only then).
    if (config.queue !== undefined) return await statusWithQueue(config, state, opts, print);
    return await statusCommand({ config, state }, opts, print);
  } finally {
    await state.close();
  }
}

/**
 * The store side of `status`, only once the state recorded a published epoch (a project that
 * never published loads no store driver): the epoch from the connector package's light probe
 * (`<package>/probe`, no driver loaded), or, when it cannot tell, the connector opened
 * read-only and one epoch read.
 */
async function probeStore(config: ResolvedConfig, stateEpoch: number, space?: SpaceRecord) {
  const { storeBehind, epochBehind } = await import('./store-health.js');
  const { probeEpoch } = await import('./connectors.js');
  const light = await probeEpoch(config.connector, {
    dataDir: config.dataDir,
    baseDir: config.configDir,
    ...(space?.namespace === undefined ? {} : { namespace: space.namespace }),
  });
  if (light !== undefined) return epochBehind(config.connector.store, light, stateEpoch);
  const { openConnector } = await import('./runtime.js');
  const connector = await openConnector(config, space);
  try {
    return await storeBehind(connector, stateEpoch);
  } finally {
    await connector.close();
  }
}

/** Runs one command (after bin.ts parsed the arguments); loads the runtime only when needed. */
export async function runCommand(parsed: ParsedArgs): Promise<number> {
  const print: Print = (s) => process.stdout.write(`${s}\n`);
  const { values, positionals } = parsed;
  const [command] = positionals;
  const json = values.json === true;
  const log = createLogger({ quiet: values.quiet === true, ...(json ? { json: true } : {}) });
  // The command modules load the engine: `status` (above the runtime) never imports them.
  if (command === 'init') return (await import('./commands.js')).initCommand(process.cwd(), print);
  if (command === 'demo') {
    const { runDemo } = await import('./demo.js');
    return runDemo({ print, log });
  }
  const config = await loadConfig(values.config as string | undefined);
  if (command === 'status') return status(config, json, print);
  if (command === 'sources') {
    const { sourcesCommand } = await import('./sources.js');
    return sourcesCommand(config, { json }, print);
  }
  if (command === 'contracts') {
    const state = await openStateStore(config.state);
    try {
      const { contractsCommand } = await import('./contracts.js');
      return await contractsCommand(config, state, { json }, print);
    } finally {
      await state.close();
    }
  }
  if (command === 'recover') return recover({ config, parsed, log, print });
  if (command === 'audit') {
    const { auditCommand } = await import('./governance.js');
    return auditCommand(
      config,
      { json, ...(positionals[1] === undefined ? {} : { url: positionals[1] }) },
      print,
    );
  }
  return withRuntime({ config, parsed, log, print });
}

/**
 * `recover` is the way out of a corrupt SQLite state file, so it must run when every other
 * command is refused with STATE_CORRUPT: the file is moved aside (never deleted) and the state
 * rebuilt from the store in a fresh one.
 */
async function recover(cmd: RuntimeCommand): Promise<number> {
  try {
    return await withRuntime(cmd);
  } catch (err) {
    if (!isRagfreshError(err, 'STATE_CORRUPT')) throw err;
    const moved = moveCorruptStateAside(cmd.config.state);
    if (moved === undefined) throw err;
    process.stderr.write(
      `ragfresh: the state file ${moved.from} is corrupt; moved it aside to ${moved.to} and rebuilding the state from the store.\n`,
    );
    return withRuntime(cmd);
  }
}

/** `--access g1,g2` as checked group names ([] when absent), or the usage line for a bad one. */
function readerAccess(value: unknown): string[] | string {
  if (value === undefined) return [];
  try {
    return parseAccessList(String(value));
  } catch (err) {
    return `${isRagfreshError(err) ? err.message.replace(/^\[ragfresh\] \[[^\]]+\] /, '') : String(err)} e.g. --access support,staff.`;
  }
}

/** One command that needs the runtime (store, fetcher, engine). */
interface RuntimeCommand {
  readonly config: ResolvedConfig;
  readonly parsed: ParsedArgs;
  readonly log: Logger;
  readonly print: Print;
}

async function withRuntime({ config, parsed, log, print }: RuntimeCommand): Promise<number> {
  const { values } = parsed;
  const [command, ...rest] = parsed.positionals;
  const json = values.json === true;
  const readOnly =
    command === 'query' ||
    command === 'inspect' ||
    command === 'eval' ||
    (command === 'gc' && values['dry-run'] === true) ||
    (command === 'verify' && values.repair !== true) ||
    (command === 'review' && ['list', 'show'].includes(rest[0] ?? 'list'));
  const { openRuntime } = await import('./runtime.js');
  if (command === 'migrate') {
    if (rest[0] !== 'embeddings' || rest.length > 1)
      return usage('migrate needs what to migrate; e.g. ragfresh migrate embeddings --dry-run.');
    const { migrateCommand } = await import('./migrate.js');
    return migrateCommand(config, values, { log, print, usage });
  }
  const { inspectCommand, queryCommand, refreshCommand } = await import('./commands.js');
  const { recoverCommand, verifyCommand } = await import('./reconcile.js');
  const { reviewCommand } = await import('./review.js');
  const rt = await openRuntime(config, {
    log,
    role: readOnly ? 'read' : command === 'verify' || command === 'recover' ? 'repair' : 'refresh',
  });
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
        if (port !== undefined && !/^\d+$/.test(String(port)))
          return usage(`--metrics-port ${String(port)} is not a port number; give an integer.`);
        const { watch } = await import('./watch.js');
        return await watch(rt, {
          log,
          print,
          ...(port === undefined ? {} : { metricsPort: Number(port) }),
        });
      }
      case 'review':
        return await reviewCommand(
          rt,
          rest,
          {
            by: String(values.by),
            json,
            all: values.all === true,
            allWithdrawn: values['all-withdrawn'] === true,
            ...(values.source === undefined ? {} : { sources: values.source as string[] }),
            ...(values.reason === undefined ? {} : { reason: String(values.reason) }),
          },
          print,
        );
      case 'verify':
        return await verifyCommand(rt, { repair: values.repair === true, json }, print);
      case 'recover':
        return await recoverCommand(rt, { json }, print);
      case 'query': {
        const question = rest.join(' ').trim();
        const k = Number(values.k);
        if (question === '' || !Number.isInteger(k) || k < 1)
          return usage(
            'query needs a question and a positive -k; e.g. ragfresh query "how much does it cost" -k 5.',
          );
        const asOf = asOfFlag(values['as-of']);
        if (asOf === null) return usage(AS_OF_USAGE);
        const access = readerAccess(values.access);
        if (typeof access === 'string') return usage(access);
        return await queryCommand(
          rt,
          question,
          {
            k,
            json,
            collapse: values['no-collapse'] !== true,
            access,
            ...(asOf === undefined ? {} : { asOf }),
          },
          print,
        );
      }
      case 'inspect': {
        if (rest[0] === undefined)
          return usage(
            'inspect needs a URL; e.g. ragfresh inspect https://docs.example.org/pricing.',
          );
        const asOf = asOfFlag(values['as-of']);
        if (asOf === null) return usage(AS_OF_USAGE);
        return await inspectCommand(
          rt,
          rest[0],
          { json, ...(asOf === undefined ? {} : { asOf }) },
          print,
        );
      }
      case 'remove': {
        const { removeCommand } = await import('./governance.js');
        return await removeCommand(
          rt,
          {
            urls: rest,
            ...(values.prefix === undefined ? {} : { prefix: String(values.prefix) }),
            ...(values.host === undefined ? {} : { host: String(values.host) }),
            ...(values.source === undefined ? {} : { sources: values.source as string[] }),
            ...(values.reason === undefined ? {} : { reason: String(values.reason) }),
            by: String(values.by),
            undo: values.undo === true,
            json,
          },
          print,
        );
      }
      case 'gc': {
        const { gcCommand } = await import('./governance.js');
        return await gcCommand(rt, { dryRun: values['dry-run'] === true, json }, print);
      }
      case 'eval': {
        const against = values.against === undefined ? undefined : Number(values.against);
        if (values.questions === undefined || (against !== undefined && !Number.isInteger(against)))
          return usage(
            'eval needs --questions <file.jsonl> and an integer --against; e.g. ragfresh eval --questions q.jsonl --against 12.',
          );
        const access = readerAccess(values.access);
        if (typeof access === 'string') return usage(access);
        const { evalCommand } = await import('./eval.js');
        return await evalCommand(
          rt,
          {
            questions: String(values.questions),
            access,
            json,
            ...(against === undefined ? {} : { against }),
            ...(json && rest[0] !== undefined ? { jsonFile: rest[0] } : {}),
          },
          print,
        );
      }
      case 'reextract': {
        const sourceIds = values.source as string[] | undefined;
        const known = config.settings.sources.map((s) => s.id);
        const unknown = sourceIds?.find((id) => !known.includes(id));
        if (unknown !== undefined)
          return usage(
            `reextract --source ${unknown}: no such source in the config (sources: ${known.join(', ')}).`,
          );
        const which = sourceIds === undefined ? {} : { sourceIds };
        if (values.republish === true) {
          const { republishCommand } = await import('./republish.js');
          return republishCommand(await rt.engine.republish(which), json, print);
        }
        const r = await rt.engine.reextract(which);
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
