import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { appendFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { obliterateQueues, type QueueRedis } from '../src/index.js';
import type { QueueProcessSpec } from '../src/process.js';

// The real services of this machine and CI (the tests fail loudly without them), and the
// user agent every test fetcher sends.
export const REDIS_URL = process.env.RAGFRESH_TEST_REDIS ?? 'redis://127.0.0.1:6379';
export const STATE_URL =
  process.env.RAGFRESH_TEST_POSTGRES ?? 'postgres://postgres@127.0.0.1:5432/test';
export const UA = 'ragfresh-test/1.0 (+https://example.org/bot)';

/**
 * Removes what a test left in the shared services: its queues and politeness keys in Redis
 * (then closes `redis`) and its namespace's rows in the Postgres state table.
 */
export async function clearServices(
  redis: QueueRedis,
  prefix: string,
  namespace: string,
): Promise<void> {
  await obliterateQueues(redis, prefix).catch(() => {});
  const keys = await redis.keys(`${prefix}:polite*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
  const db = new pg.Client({ connectionString: STATE_URL });
  await db.connect();
  await db.query(`DELETE FROM ragfresh_state WHERE key LIKE $1`, [`${namespace}:%`]);
  await db.end();
}

/** Built entry of a queue process (child processes run dist code: build first). */
export const PROCESS_MAIN = fileURLToPath(new URL('../dist/process-main.js', import.meta.url));
const STORE_PROCESS = fileURLToPath(new URL('./store-process.ts', import.meta.url));

export interface Child {
  readonly name: string;
  readonly proc: ChildProcess;
  readonly events: { event: string; [k: string]: unknown }[];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  waitFor(event: string): Promise<void>;
}

/** Starts one queue process with its spec in the environment; its JSON lines are collected. */
export function startChild(spec: QueueProcessSpec): Child {
  const proc = spawn(process.execPath, [PROCESS_MAIN], {
    env: { ...process.env, RAGFRESH_QUEUE_SPEC: JSON.stringify(spec) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const events: Child['events'] = [];
  const waiters: { event: string; resolve: () => void }[] = [];
  let buf = '';
  // RAGFRESH_QUEUE_TEST_LOG=<file>: every child's output, prefixed by its name (diagnosis).
  const tee = process.env.RAGFRESH_QUEUE_TEST_LOG;
  const record = (stream: string, d: Buffer): void => {
    if (tee !== undefined)
      appendFileSync(tee, `${new Date().toISOString()} ${spec.name} ${stream} ${d.toString()}`);
  };
  proc.stdout!.on('data', (d: Buffer) => {
    record('out', d);
    buf += d.toString();
    for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      try {
        const e = JSON.parse(line) as Child['events'][number];
        events.push(e);
        for (const w of waiters.filter((x) => x.event === e.event)) w.resolve();
      } catch {
        // not a JSON line
      }
    }
  });
  let stderr = '';
  proc.stderr!.on('data', (d: Buffer) => {
    record('err', d);
    stderr += d.toString();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.on('exit', (code, signal) => resolve({ code, signal })),
  );
  return {
    name: spec.name,
    proc,
    events,
    exited,
    waitFor(event) {
      if (events.some((e) => e.event === event)) return Promise.resolve();
      return new Promise((resolve, reject) => {
        waiters.push({ event, resolve });
        void exited.then(({ code, signal }) =>
          reject(new Error(`${spec.name} exited (${code ?? signal}) before "${event}": ${stderr}`)),
        );
      });
    },
  };
}

export function uniqueName(kind: string): string {
  return `rf-${kind}-${randomUUID().slice(0, 8)}`;
}

/** A connector factory module, as the queue process spec takes it. */
export type ConnectorSpec = QueueProcessSpec['connector'];

/**
 * The pgvector target in a process of its own (see store-process.ts): resolves with the
 * connector spec once the server listens; `stop` ends the process and its server.
 */
export async function startStore(
  namespace: string,
): Promise<{ readonly connector: ConnectorSpec; stop(): Promise<void> }> {
  const proc = spawn(process.execPath, [STORE_PROCESS, namespace], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => proc.on('exit', () => resolve()));
  let stderr = '';
  proc.stderr!.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const connector = await new Promise<ConnectorSpec>((resolve, reject) => {
    let buf = '';
    proc.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      const line = buf.split('\n').find((l) => l.includes('"ready"'));
      if (line !== undefined) resolve((JSON.parse(line) as { connector: ConnectorSpec }).connector);
    });
    void exited.then(() =>
      reject(new Error(`store process exited before it was ready: ${stderr}`)),
    );
  });
  return {
    connector,
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      await exited;
    },
  };
}
