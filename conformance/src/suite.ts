import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import {
  type Connector,
  type ConnectorCapabilities,
  errorMessage,
  type FixtureStartOptions,
  InMemoryStateStore,
  type JsonValue,
  Publisher,
  type PublisherOptions,
  RagfreshError,
  type StateStore,
  type StoreFixture,
  type StoreTarget,
} from '@ragfresh/core';
import { CASES } from './cases/index.js';
import { Corpus, DIMENSIONS } from './corpus.js';
import type {
  CaseContext,
  CaseReport,
  ConformanceCase,
  ConformanceReport,
  RegisterSuiteOptions,
  RunSuiteOptions,
} from './types.js';

/** Version of this suite, recorded in every report (pin it in connector devDependencies). */
export const SUITE_VERSION: string = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
    version: string;
  }
).version;
export const SUITE_NAME = '@ragfresh/conformance';

const DEFAULT_CASE_TIMEOUT_MS = 60_000;

/** A random namespace safe for every store's naming rules (lower-case letters and digits). */
export function randomNamespace(): string {
  return `rf${randomBytes(6).toString('hex')}`;
}

class Context implements CaseContext {
  readonly corpus: Corpus;
  readonly dimensions = DIMENSIONS;
  readonly failures: string[] = [];
  readonly observations: Record<string, JsonValue> = {};
  readonly timings: Record<string, number> = {};
  summary = '';
  readonly #connectors: Connector[] = [];
  readonly #publishers: Publisher[] = [];
  readonly #dirs: string[] = [];
  #main: Promise<Connector> | undefined;

  constructor(
    readonly target: StoreTarget,
    readonly capabilities: ConnectorCapabilities,
    readonly namespace: string,
  ) {
    this.corpus = new Corpus(namespace, DIMENSIONS);
  }

  connector(): Promise<Connector> {
    this.#main ??= this.openAnotherConnector();
    return this.#main;
  }

  async openAnotherConnector(): Promise<Connector> {
    const connector = await this.target.createConnector(this.namespace);
    this.#connectors.push(connector);
    await connector.open({ dimensions: this.dimensions });
    return connector;
  }

  memoryState(): StateStore {
    return new InMemoryStateStore();
  }

  async publisher(options: Partial<Omit<PublisherOptions, 'connector'>> = {}): Promise<Publisher> {
    const publisher = await Publisher.open({
      state: this.memoryState(),
      ...options,
      connector: await this.connector(),
    });
    this.#publishers.push(publisher);
    return publisher;
  }

  tempDir(): string {
    const dir = mkdtempSync(join(tmpdir(), 'ragfresh-conformance-'));
    this.#dirs.push(dir);
    return dir;
  }

  #attempt: string[] | undefined;

  check(condition: boolean, failure: string): boolean {
    if (!condition) (this.#attempt ?? this.failures).push(failure);
    return condition;
  }

  async eventually(label: string, block: () => Promise<void>): Promise<void> {
    if (this.#attempt !== undefined) throw new Error('ctx.eventually blocks do not nest');
    const v = this.capabilities.visibility;
    const budget = v.mode === 'immediate' ? 0 : v.maxLagMs * 2 + 1_000;
    const started = performance.now();
    let delay = 25;
    let attempts = 0;
    for (;;) {
      const problems: string[] = [];
      this.#attempt = problems;
      attempts++;
      try {
        await block();
      } catch (err) {
        problems.push(`unexpected error: ${errorMessage(err)}`);
      }
      this.#attempt = undefined;
      const elapsed = performance.now() - started;
      if (problems.length === 0 || elapsed + delay > budget) {
        this.failures.push(...problems);
        if (budget > 0) {
          this.observations[`${label}SettledMs`] =
            problems.length === 0 ? Math.round(elapsed) : null;
          this.observations[`${label}Attempts`] = attempts;
        }
        return;
      }
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 250);
    }
  }

  observe(key: string, value: JsonValue): void {
    this.observations[key] = value;
  }

  observed(summary: string): void {
    this.summary = summary;
  }

  async time<T>(label: string, fn: () => Promise<T>): Promise<T> {
    const t = performance.now();
    try {
      return await fn();
    } finally {
      this.timings[label] = Math.round((performance.now() - t) * 10) / 10;
    }
  }

  async cleanup(): Promise<void> {
    for (const p of this.#publishers) {
      try {
        await p.close();
      } catch (err) {
        this.failures.push(`closing a publisher: ${errorMessage(err)}`);
      }
    }
    for (const c of this.#connectors) {
      try {
        await c.close();
      } catch (err) {
        this.failures.push(`closing a connector: ${errorMessage(err)}`);
      }
    }
    for (const d of this.#dirs) rmSync(d, { recursive: true, force: true });
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/*
 * The watchdog: a worker thread with its own event loop. The case's own timeout is a timer on
 * the main loop, which never fires while a synchronous driver call (or a busy wait) blocks
 * that loop; the worker's timer still does. It then prints one line naming the case and kills
 * the process (the only way out of a blocked thread), so the run fails with the case's name
 * instead of hanging. A healthy case disarms it when its report is ready.
 */
const WATCHDOG_SOURCE = `
const { parentPort } = require('node:worker_threads');
const { writeSync } = require('node:fs');
const timers = new Map();
parentPort.on('message', (m) => {
  clearTimeout(timers.get(m.id));
  timers.delete(m.id);
  if (m.line !== undefined) timers.set(m.id, setTimeout(() => {
    writeSync(2, m.line + '\\n');
    process.kill(process.pid, 'SIGKILL');
  }, m.ms));
});`;
let watchdog: Worker | undefined;
let watched = 0;

/** Arms the watchdog for one case (cases may run concurrently); returns its disarm. */
function armWatchdog(caseId: string, timeoutMs: number): () => void {
  if (watchdog === undefined) {
    watchdog = new Worker(WATCHDOG_SOURCE, { eval: true });
    watchdog.unref();
  }
  const worker = watchdog;
  const id = ++watched;
  // Past the case's own timeout (which reports normally while the loop runs) by a margin.
  const ms = timeoutMs + Math.min(15_000, Math.max(200, timeoutMs / 4));
  worker.postMessage({
    id,
    ms,
    line: `[ragfresh] [conformance] case ${caseId} did not finish within ${ms} ms and the event loop stayed blocked (a synchronous driver call or a busy wait in the connector); the run was stopped. Make every store call asynchronous.`,
  });
  return () => worker.postMessage({ id });
}

/**
 * Runs one case against a started target. Never throws: failures are in the report. A case
 * that blocks the event loop past its time budget stops the process (see the watchdog).
 */
export async function runCase(
  c: ConformanceCase,
  target: StoreTarget,
  capabilities: ConnectorCapabilities,
): Promise<CaseReport> {
  const namespace = randomNamespace();
  const base = {
    id: c.id,
    title: c.title,
    guarantee: c.guarantee,
    whenItFails: c.whenItFails,
    declared: c.declared(capabilities),
    namespace,
  };
  if (!c.appliesTo(capabilities)) {
    return {
      ...base,
      status: 'skipped',
      observed: 'not applicable to the declared capabilities',
      failures: [],
      observations: {},
      timingsMs: {},
      durationMs: 0,
    };
  }
  const ctx = new Context(target, capabilities, namespace);
  const started = performance.now();
  const timeoutMs = c.timeoutMs ?? DEFAULT_CASE_TIMEOUT_MS;
  const disarm = armWatchdog(c.id, timeoutMs);
  try {
    await withTimeout(c.run(ctx), timeoutMs, `case ${c.id}`);
  } catch (err) {
    ctx.failures.push(`unexpected error: ${errorMessage(err)}`);
  } finally {
    await ctx.cleanup();
    disarm();
  }
  const durationMs = Math.round(performance.now() - started);
  return {
    ...base,
    status: ctx.failures.length === 0 ? 'passed' : 'failed',
    observed: ctx.summary || (ctx.failures.length === 0 ? 'as declared' : 'see failures'),
    failures: ctx.failures,
    observations: ctx.observations,
    timingsMs: ctx.timings,
    durationMs,
  };
}

/** Starts the fixture and reads the connector's frozen manifest from a probe connector. */
export async function startTarget(
  fixture: StoreFixture,
  startOptions?: FixtureStartOptions,
): Promise<{ target: StoreTarget; capabilities: ConnectorCapabilities }> {
  const target = await fixture.start(startOptions);
  try {
    const probe = await target.createConnector(randomNamespace());
    const capabilities = probe.capabilities;
    await probe.close();
    return { target, capabilities };
  } catch (err) {
    await target.stop().catch(() => undefined);
    throw err;
  }
}

function selectCases(ids: readonly string[] | undefined): readonly ConformanceCase[] {
  if (ids === undefined) return CASES;
  const known = new Map(CASES.map((c) => [c.id, c]));
  const unknown = ids.filter((id) => !known.has(id));
  if (unknown.length > 0) {
    throw new RagfreshError(
      'INVALID_ARGUMENT',
      `unknown case id(s): ${unknown.join(', ')}; known: ${CASES.map((c) => c.id).join(', ')}.`,
      {
        scope: 'conformance',
      },
    );
  }
  return CASES.filter((c) => ids.includes(c.id));
}

/** Runs the suite directly (the CLI) and returns the report. The fixture is stopped at the end. */
export async function runSuite(options: RunSuiteOptions): Promise<ConformanceReport> {
  const cases = selectCases(options.cases);
  const startedAt = new Date().toISOString();
  const t0 = performance.now();
  const { target, capabilities } = await startTarget(options.fixture, options.startOptions);
  const reports: CaseReport[] = [];
  try {
    options.onStart?.({ target, capabilities, suiteVersion: SUITE_VERSION });
    for (const c of cases) {
      const report = await runCase(c, target, capabilities);
      reports.push(report);
      options.onCase?.(report);
    }
  } finally {
    await target.stop();
  }
  const count = (s: CaseReport['status']) => reports.filter((r) => r.status === s).length;
  return {
    suite: { name: SUITE_NAME, version: SUITE_VERSION },
    store: capabilities.store,
    target: { kind: target.kind, description: target.description },
    capabilities,
    startedAt,
    durationMs: Math.round(performance.now() - t0),
    passed: count('failed') === 0,
    counts: { passed: count('passed'), failed: count('failed'), skipped: count('skipped') },
    cases: reports,
  };
}

/** The message a registered test fails with: the guarantee, what went wrong, where to look. */
export function failureMessage(report: CaseReport): string {
  return [
    `${report.id} failed: ${report.guarantee}`,
    ...report.failures.map((f) => `  - ${f}`),
    `  declared: ${report.declared}; observed: ${report.observed}`,
    `  when it fails: ${report.whenItFails}`,
  ].join('\n');
}

/**
 * Registers every case with an injected test runner (vitest, jest...). The target starts in
 * beforeAll; a case that does not apply to the declared capabilities is skipped through the
 * runner's context when it can skip (vitest), and passes with nothing to check otherwise.
 */
export function runConformanceSuite(options: RegisterSuiteOptions): void {
  const { runner, fixture, startOptions } = options;
  runner.describe(`ragfresh conformance ${SUITE_VERSION}: ${fixture.store}`, () => {
    let started: { target: StoreTarget; capabilities: ConnectorCapabilities } | undefined;
    let startError: unknown;
    runner.beforeAll(async () => {
      try {
        started = await startTarget(fixture, startOptions);
        // Test-runner output names what the suite ran against, as the CLI report does.
        console.log(
          `ragfresh conformance ${SUITE_VERSION}: store ${fixture.store}, target: ${started.target.kind} (${started.target.description})`,
        );
      } catch (err) {
        startError = err;
        throw err;
      }
    }, 180_000);
    runner.afterAll(async () => {
      await started?.target.stop();
    }, 60_000);
    for (const c of CASES) {
      runner.it(
        `${c.id}: ${c.title}`,
        async (context?: unknown) => {
          if (started === undefined) {
            throw new Error(
              `the ${fixture.store} fixture did not start: ${errorMessage(startError)}`,
            );
          }
          if (!c.appliesTo(started.capabilities)) {
            const skip = (context as { skip?: (note?: string) => void } | undefined)?.skip;
            skip?.('not applicable to the declared capabilities');
            return;
          }
          const report = await runCase(c, started.target, started.capabilities);
          if (report.status === 'failed') throw new Error(failureMessage(report));
        },
        (c.timeoutMs ?? DEFAULT_CASE_TIMEOUT_MS) + 10_000,
      );
    }
  });
}
