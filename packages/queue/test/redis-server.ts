import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

// redis-server processes of a test's own (Debian's redis-server and redis-cli), on free
// loopback ports, stopped by PID. Missing binaries fail loudly: nothing is skipped.
export const REDIS_SERVER = process.env.RAGFRESH_TEST_REDIS_SERVER ?? 'redis-server';
export const REDIS_CLI = process.env.RAGFRESH_TEST_REDIS_CLI ?? 'redis-cli';

const run = promisify(execFile);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Throws one line naming the Debian package when a binary is missing. */
export function requireRedisBinaries(): void {
  for (const [bin, pkg] of [
    [REDIS_SERVER, 'redis-server'],
    [REDIS_CLI, 'redis-tools'],
  ] as const) {
    try {
      execFileSync(bin, ['--version'], { stdio: 'ignore' });
    } catch (err) {
      throw new Error(`cannot run ${bin} (${(err as Error).message}); install ${pkg}`);
    }
  }
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export interface RedisServer {
  readonly port: number;
  readonly proc: ChildProcess;
  readonly exited: Promise<unknown>;
  /** SIGTERM to this server's PID, then waits for it to exit. */
  stop(): Promise<void>;
}

/** One redis-server on `port` in `dir` (no RDB snapshots), with `args` on top. */
export function startRedisServer(port: number, dir: string, args: string[] = []): RedisServer {
  const proc = spawn(
    REDIS_SERVER,
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--dir', dir, ...args],
    { stdio: 'ignore' },
  );
  const exited = new Promise((resolve, reject) => {
    proc.on('exit', resolve);
    proc.on('error', (err) =>
      reject(new Error(`cannot start ${REDIS_SERVER} (${err.message}); install redis-server`)),
    );
  });
  return {
    port,
    proc,
    exited,
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      await exited;
    },
  };
}

/** Runs redis-cli against `port`; its stdout. */
export async function redisCli(port: number, ...args: string[]): Promise<string> {
  const { stdout } = await run(REDIS_CLI, ['-h', '127.0.0.1', '-p', String(port), ...args]);
  return stdout;
}

/** Waits until the server on `port` answers PING (a hang guard: the test's timeout). */
export async function untilAnswers(server: RedisServer): Promise<void> {
  for (;;) {
    if (server.proc.exitCode !== null) throw new Error(`redis-server on ${server.port} exited`);
    if ((await redisCli(server.port, 'ping').catch(() => '')).trim() === 'PONG') return;
    await sleep(50);
  }
}

/** A redis-server of its own on a free port; `stop` ends it and removes its folder. */
export async function startOwnRedis(args: string[] = []): Promise<RedisServer> {
  requireRedisBinaries();
  const dir = mkdtempSync(join(tmpdir(), 'ragfresh-redis-'));
  const server = startRedisServer(await freePort(), dir, args);
  await untilAnswers(server);
  return {
    ...server,
    async stop() {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface RedisCluster {
  /** `redis://127.0.0.1:<port>` of one master, for a client to discover the others. */
  readonly seed: string;
  /** The masters as created (a failover may promote a replica in place of one). */
  readonly masters: readonly RedisServer[];
  /** The replicas as created, `replicas` per master. */
  readonly replicas: readonly RedisServer[];
  stop(): Promise<void>;
}

/**
 * A Redis Cluster of `size` masters with `replicas` replicas each (default none) on free
 * loopback ports (data and cluster bus), cluster config files in a temporary folder; resolves
 * once every node says the cluster is ok (and every replica's link to its master is up).
 * `nodeTimeoutMs` is `cluster-node-timeout` (default 5000): how long until a silent master is
 * failed over.
 */
export async function startRedisCluster(
  size = 3,
  options: { readonly replicas?: number; readonly nodeTimeoutMs?: number } = {},
): Promise<RedisCluster> {
  requireRedisBinaries();
  const replicas = options.replicas ?? 0;
  const dir = mkdtempSync(join(tmpdir(), 'ragfresh-redis-cluster-'));
  const nodes: RedisServer[] = [];
  const stop = async () => {
    for (const n of nodes) await n.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < size * (1 + replicas); i++) {
      const port = await freePort();
      const busPort = await freePort();
      nodes.push(
        startRedisServer(port, dir, [
          '--appendonly',
          'no',
          '--cluster-enabled',
          'yes',
          '--cluster-port',
          String(busPort),
          '--cluster-config-file',
          join(dir, `nodes-${port}.conf`),
          '--cluster-node-timeout',
          String(options.nodeTimeoutMs ?? 5000),
        ]),
      );
    }
    for (const n of nodes) await untilAnswers(n);
    // redis-cli makes the first `size` nodes the masters.
    await run(REDIS_CLI, [
      '--cluster',
      'create',
      ...nodes.map((n) => `127.0.0.1:${n.port}`),
      '--cluster-replicas',
      String(replicas),
      '--cluster-yes',
    ]);
    for (const n of nodes)
      while (!(await redisCli(n.port, 'cluster', 'info')).includes('cluster_state:ok'))
        await sleep(100);
    for (const n of nodes.slice(size))
      while (!(await redisCli(n.port, 'info', 'replication')).includes('master_link_status:up'))
        await sleep(100);
  } catch (err) {
    await stop();
    throw err;
  }
  const masters = nodes.slice(0, size);
  return {
    seed: `redis://127.0.0.1:${masters[0]!.port}`,
    masters,
    replicas: nodes.slice(size),
    stop,
  };
}
