#!/usr/bin/env node
/**
 * ragfresh-conformance --store <name|path> [--url <url>] [--json report.json] [--cases <ids>]
 *
 * Loads `@ragfresh/connector-<name>/fixture`, else `ragfresh-connector-<name>/fixture`, as
 * resolved from the current directory (or the fixture of a package folder / file given as a
 * path), starts its target, runs the suite, prints a table and exits non-zero when any case
 * failed.
 */
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { errorMessage, type StoreFixture } from '@ragfresh/core';
import { CASES } from './cases/index.js';
import { FixtureNotFound, isStorePath, resolveFixtureModule } from './fixture-module.js';
import { formatCaseRow, formatHeader, formatSummary, formatTableHead } from './report.js';

import { describeScaffold, scaffold } from './scaffold.js';
import { runSuite, SUITE_VERSION } from './suite.js';
import type { ConformanceReport } from './types.js';

// node:sqlite (core's state store) announces itself as experimental on every run; keep the
// table clean and let every other warning through.
process.removeAllListeners('warning');
process.on('warning', (w) => {
  if (w.name === 'ExperimentalWarning' && /SQLite/i.test(w.message)) return;
  process.stderr.write(`${w.name}: ${w.message}\n`);
});

const USAGE =
  'usage: ragfresh-conformance --store <name|path> [--url <url>] [--json <report.json>] [--cases <id,id,...>]\n       ragfresh-conformance init <store> [--dir <folder>] [--package <name>]';

/** Exit 2: the command line is wrong. Exit 1: the suite ran and something failed (or could not start). */
class UsageError extends Error {}

interface CliOptions {
  readonly store: string;
  readonly url?: string;
  readonly json?: string;
  readonly cases?: readonly string[];
}

function parse(argv: readonly string[]): CliOptions | 'help' {
  let values: { store?: string; url?: string; json?: string; cases?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        store: { type: 'string' },
        url: { type: 'string' },
        json: { type: 'string' },
        cases: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    throw new UsageError(`${errorMessage(err).split('\n')[0]}; ${USAGE}`);
  }
  if (values.help === true) return 'help';
  if (values.store === undefined || values.store === '')
    throw new UsageError(
      `--store is required (memory, chroma, pgvector, lancedb, qdrant, pinecone); ${USAGE}`,
    );
  if (!isStorePath(values.store) && !/^[a-z0-9][a-z0-9._-]*$/.test(values.store))
    throw new UsageError(
      `--store ${JSON.stringify(values.store)} is not a store name; use lower-case letters, digits and '-', e.g. --store memory, or a path such as --store ./my-connector.`,
    );
  if (values.url !== undefined) {
    try {
      new URL(values.url);
    } catch {
      throw new UsageError(
        `--url ${JSON.stringify(values.url)} is not an absolute URL; give e.g. --url http://127.0.0.1:8000.`,
      );
    }
  }
  if (values.json === '')
    throw new UsageError('--json needs a file path, e.g. --json report.json.');
  let cases: string[] | undefined;
  if (values.cases !== undefined) {
    cases = values.cases
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    const unknown = cases.filter((id) => !CASES.some((c) => c.id === id));
    if (cases.length === 0 || unknown.length > 0) {
      throw new UsageError(
        `--cases: unknown case id(s) ${unknown.join(', ') || '(none given)'}; known: ${CASES.map((c) => c.id).join(', ')}.`,
      );
    }
  }
  return {
    store: values.store,
    ...(values.url === undefined ? {} : { url: values.url }),
    ...(values.json === undefined ? {} : { json: resolve(values.json) }),
    ...(cases === undefined ? {} : { cases }),
  };
}

/**
 * Resolves the fixture from the current directory with an ordinary ESM import, as the user's
 * project sees it (not through NODE_PATH or pnpm's hidden hoist folder).
 */
async function loadFixture(
  store: string,
): Promise<{ fixture: StoreFixture; connector?: ConformanceReport['connector'] }> {
  let found: ReturnType<typeof resolveFixtureModule>;
  try {
    found = resolveFixtureModule(store, process.cwd());
  } catch (err) {
    if (err instanceof FixtureNotFound) throw new UsageError(err.message);
    throw err;
  }
  const mod = (await import(found.url)) as { fixture?: StoreFixture };
  if (mod.fixture === undefined || typeof mod.fixture.start !== 'function') {
    throw new UsageError(
      `${found.specifier} does not export a fixture ({ store, start() }); it is not a ragfresh connector fixture.`,
    );
  }
  const pkg = found.package;
  return {
    fixture: mod.fixture,
    ...(pkg === undefined ? {} : { connector: { package: pkg.name, version: pkg.version } }),
  };
}

const INIT_USAGE =
  'usage: ragfresh-conformance init <store> [--dir <folder>] [--package <name>] [--core <range>] [--conformance <version>]';

/** `init <store>`: writes a connector package that builds and fails the suite until written. */
function init(argv: readonly string[]): number {
  let positionals: string[];
  let values: { dir?: string; package?: string; core?: string; conformance?: string };
  try {
    ({ positionals, values } = parseArgs({
      args: [...argv],
      options: {
        dir: { type: 'string' },
        package: { type: 'string' },
        core: { type: 'string' },
        conformance: { type: 'string' },
      },
      strict: true,
      allowPositionals: true,
    }));
  } catch (err) {
    throw new UsageError(`${errorMessage(err).split('\n')[0]}; ${INIT_USAGE}`);
  }
  const [store, ...extra] = positionals;
  if (store === undefined || extra.length > 0)
    throw new UsageError(`init takes one store name, e.g. init mystore; ${INIT_USAGE}`);
  let result: ReturnType<typeof scaffold>;
  try {
    result = scaffold({
      store,
      ...(values.dir === undefined ? {} : { dir: values.dir }),
      ...(values.package === undefined ? {} : { packageName: values.package }),
      ...(values.core === undefined ? {} : { coreRange: values.core }),
      ...(values.conformance === undefined ? {} : { conformanceRange: values.conformance }),
    });
  } catch (err) {
    throw new UsageError(errorMessage(err));
  }
  process.stdout.write(`${describeScaffold(result)}\n`);
  return 0;
}

async function main(argv: readonly string[]): Promise<number> {
  if (argv[0] === 'init') return init(argv.slice(1));
  const options = parse(argv);
  if (options === 'help') {
    process.stdout.write(
      `${USAGE}\n\nCases:\n${CASES.map((c) => `  ${c.id.padEnd(26)} ${c.title}`).join('\n')}\n`,
    );
    return 0;
  }
  const { fixture, connector } = await loadFixture(options.store);
  const suiteReport = await runSuite({
    fixture,
    ...(options.url === undefined ? {} : { startOptions: { url: options.url } }),
    ...(options.cases === undefined ? {} : { cases: options.cases }),
    onStart: (info) =>
      process.stdout.write(
        `${formatHeader({ ...info, ...(connector === undefined ? {} : { connector }) })}\n\n${formatTableHead()}\n`,
      ),
    onCase: (r) => process.stdout.write(`${formatCaseRow(r)}\n`),
  });
  const report: ConformanceReport =
    connector === undefined ? suiteReport : { ...suiteReport, connector };
  process.stdout.write(`\n${formatSummary(report)}\n`);
  if (options.json !== undefined) {
    writeFileSync(options.json, `${JSON.stringify(report, null, 2)}\n`);
    process.stdout.write(`report: ${options.json} (suite ${SUITE_VERSION})\n`);
  }
  return report.passed ? 0 : 1;
}

main(process.argv.slice(2)).then(
  // Exit explicitly: a fixture's server or client may keep handles open after stop().
  (code) => process.exit(code),
  (err: unknown) => {
    const usage = err instanceof UsageError;
    process.stderr.write(`ragfresh-conformance: ${errorMessage(err).split('\n')[0]}\n`);
    process.exit(usage ? 2 : 1);
  },
);
