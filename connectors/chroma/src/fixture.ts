import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { RagfreshError, type StoreFixture, type StoreTarget } from '@ragfresh/core';
import { createChromaConnector } from './index.js';

const require = createRequire(import.meta.url);

/** The `chroma` CLI script of the installed `chromadb` package (its `bin`). */
export function chromaCliPath(): string {
  // `chromadb` exports only its entry point (dist/cjs/chromadb.cjs for require); the CLI sits in dist/.
  return join(dirname(require.resolve('chromadb')), '..', 'cli.mjs');
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function heartbeat(url: string): Promise<boolean> {
  try {
    const res = await fetch(`${url}/api/v2/heartbeat`, { signal: AbortSignal.timeout(1000) });
    return res.ok;
  } catch {
    return false;
  }
}

async function serverVersion(url: string): Promise<string> {
  try {
    const res = await fetch(`${url}/api/v2/version`, { signal: AbortSignal.timeout(1000) });
    return String(await res.json());
  } catch {
    return 'unknown';
  }
}

export interface LocalChromaServer {
  readonly url: string;
  readonly path: string;
  readonly process: ChildProcess;
  stop(): Promise<void>;
}

/**
 * Starts `chroma run --path <tmpdir> --port <free port>` by running the CLI's node script with
 * this process's node, so the server is our direct child and stopping it stops the server.
 */
export async function startLocalChroma(
  options: { timeoutMs?: number } = {},
): Promise<LocalChromaServer> {
  const path = mkdtempSync(join(tmpdir(), 'ragfresh-chroma-'));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(
    process.execPath,
    [chromaCliPath(), 'run', '--path', path, '--port', String(port)],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ANONYMIZED_TELEMETRY: 'False' },
    },
  );
  let output = '';
  const keep = (b: Buffer) => {
    output = (output + b.toString('utf8')).slice(-4000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  let exited = false;
  const exit = new Promise<void>((resolve) => {
    child.once('exit', () => {
      exited = true;
      resolve();
    });
  });
  const stop = async () => {
    if (!exited) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => {
        if (!exited) child.kill('SIGKILL');
      }, 5000);
      await exit;
      clearTimeout(timer);
    }
    rmSync(path, { recursive: true, force: true });
  };
  const deadline = Date.now() + (options.timeoutMs ?? 30_000);
  while (!(await heartbeat(url))) {
    if (exited || Date.now() > deadline) {
      await stop();
      throw new RagfreshError(
        'STORE_UNREACHABLE',
        `the local Chroma server did not answer ${url}/api/v2/heartbeat (${exited ? 'it exited' : 'timed out'}); output: ${output.trim().slice(-500)}`,
        { scope: 'chroma' },
      );
    }
    await sleep(100);
  }
  return { url, path, process: child, stop };
}

/** Chroma collection names allow `[A-Za-z0-9._-]`, 3+ characters, alphanumeric at both ends. */
export function collectionForNamespace(namespace: string): string {
  const cleaned = namespace.replace(/[^A-Za-z0-9._-]/g, '-').replace(/\.\.+/g, '.');
  return `rf-${cleaned}-c`.slice(0, 200);
}

/** Local server started from the `chromadb` package, or an external server given by `url`. */
export const fixture: StoreFixture = {
  store: 'chroma',
  async start(options = {}): Promise<StoreTarget> {
    const external = options.url?.replace(/\/+$/, '');
    const server = external === undefined ? await startLocalChroma() : undefined;
    const url = external ?? server!.url;
    if (external !== undefined && !(await heartbeat(url))) {
      throw new RagfreshError(
        'STORE_UNREACHABLE',
        `no Chroma server answers ${url}/api/v2/heartbeat; start one or fix --url.`,
        {
          scope: 'chroma',
        },
      );
    }
    const version = await serverVersion(url);
    const spec = (ns: string) => ({ url, collection: collectionForNamespace(ns) });
    return {
      kind: external === undefined ? 'local-server' : 'url',
      description:
        external === undefined
          ? `Chroma ${version} started by the fixture (chroma run --path ${server!.path}) at ${url}`
          : `Chroma ${version} at ${url}`,
      async createConnector(ns) {
        return createChromaConnector(spec(ns));
      },
      connectorSpec(ns) {
        return {
          module: new URL('../dist/index.js', import.meta.url).href,
          exportName: 'createChromaConnector',
          options: spec(ns),
        };
      },
      async stop() {
        await server?.stop();
      },
    };
  },
};
