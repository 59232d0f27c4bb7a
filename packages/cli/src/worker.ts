import { parseArgs } from 'node:util';
import { RagfreshError } from '@ragfresh/core';
import { RedisPolitenessGate } from '@ragfresh/fetch';
import type { QueueConfig } from '@ragfresh/queue';
import { loadConfig, type ResolvedConfig } from './config.js';
import { EXIT } from './exit.js';
import { loadQueuePackage, type QueuePackage, queueMissingLine } from './queue-package.js';
import { openRuntime } from './runtime.js';
import { queueSection, renderQueueSection } from './status.js';

const USAGE = `usage: ragfresh worker [--role pages|publish|both] [--name n] [--metrics-port n] [--config f]
       ragfresh worker status [--json] [--config f]
       ragfresh watch --distributed [--config f]       enqueue due sources for the workers`;

/** The config's `queue` key (its shape is checked by the config schema). */
function queueOf(config: ResolvedConfig, q: QueuePackage): QueueConfig {
  const queue = config.queue;
  if (queue === undefined)
    throw new RagfreshError(
      'INVALID_CONFIG',
      'config queue: is missing; add queue: { redis: "redis://127.0.0.1:6379", prefix: "ragfresh" } to use workers.',
      { scope: 'config' },
    );
  const problem = q.queueConfigProblem(queue);
  if (problem !== undefined)
    throw new RagfreshError('INVALID_CONFIG', `config ${problem}.`, { scope: 'config' });
  return queue;
}

/** `ragfresh worker …` and `ragfresh watch --distributed`. */
export async function runWorkerCommand(argv: string[]): Promise<number> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (err) {
    process.stderr.write(`ragfresh: ${(err as Error).message}\n${USAGE}\n`);
    return EXIT.usage;
  }
  const { values, positionals } = parsed;
  if (values.help === true) {
    process.stdout.write(`${USAGE}\n`);
    return EXIT.ok;
  }
  const role = values.role ?? 'both';
  if (!['pages', 'publish', 'both'].includes(role)) {
    process.stderr.write(`ragfresh: --role "${role}" is unknown; use pages, publish or both.\n`);
    return EXIT.usage;
  }
  const q = await loadQueuePackage();
  if (q === undefined) {
    const what = positionals[0] === 'watch' ? 'ragfresh watch --distributed' : 'ragfresh worker';
    process.stderr.write(`${queueMissingLine(what)}\n`);
    return EXIT.usage;
  }
  const { connectRedis, PageWorker, PublishConsumer, prefixOf, scheduleDueSources } = q;
  const config = await loadConfig(values.config);
  const queue = queueOf(config, q);
  const prefix = prefixOf(queue);
  const say = (message: string): void => {
    process.stderr.write(`ragfresh worker: ${message}\n`);
  };
  if (positionals[1] === 'status') {
    // One connect attempt: an unreachable Redis is one line, not a reconnect loop.
    const section = (await queueSection(config))!;
    process.stdout.write(
      values.json === true ? `${JSON.stringify(section)}\n` : `${renderQueueSection(section)}\n`,
    );
    return 'problem' in section ? EXIT.failure : EXIT.ok;
  }
  const redis = connectRedis(queue, say);
  const gate = new RedisPolitenessGate({ redis, prefix: `${prefix}:polite` });
  const runtime = await openRuntime(config, {
    role:
      positionals[0] === 'watch'
        ? 'scheduler'
        : role === 'pages'
          ? 'page-worker'
          : role === 'publish'
            ? 'publish-worker'
            : 'worker',
    politeness: gate,
  }).catch(async (err: unknown) => {
    await redis.quit().catch(() => {});
    throw err;
  });
  const { deps } = runtime;
  const stop = new AbortController();
  process.once('SIGTERM', () => stop.abort());
  process.once('SIGINT', () => stop.abort());
  const stopped = new Promise<void>((r) => stop.signal.addEventListener('abort', () => r()));
  try {
    await q.assertQueueRedis(redis, say, stop.signal);
    if (positionals[0] === 'watch') {
      while (!stop.signal.aborted) {
        const report = await scheduleDueSources({
          connection: redis,
          prefix,
          deps,
          signal: stop.signal,
        });
        for (const s of report.sources)
          say(
            `${s.sourceId}: ${s.pages} pages in ${s.jobs} jobs (window ${s.runKey}, ${s.alreadyQueued} already queued)`,
          );
        // The next look in a minute, or at once on SIGTERM: a pending timer would keep the
        // process alive for the rest of the minute after the loop ended.
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([stopped, new Promise((r) => (timer = setTimeout(r, 60_000)))]);
        clearTimeout(timer);
      }
      return EXIT.ok;
    }
    const port = values['metrics-port'] ?? config.metricsPort;
    const served = port === undefined ? undefined : await runtime.metrics.serve(Number(port));
    if (served !== undefined) say(`metrics at http://127.0.0.1:${served.port}/metrics`);
    const name = values.name ?? `worker-${process.pid}`;
    const worker =
      role === 'publish'
        ? undefined
        : new PageWorker({ connection: redis, prefix, deps, name, onError: say });
    const publisher =
      role === 'pages'
        ? undefined
        : new PublishConsumer({
            connection: redis,
            prefix,
            deps,
            name: `${name}:publish`,
            log: say,
            publisher: runtime.publisherOptions,
          });
    publisher?.start();
    say(`${name} taking ${role === 'both' ? 'page and publish' : role} work from ${prefix}`);
    const publishWaits = () => {
      for (const [host, ms] of gate.waitedMsByHost)
        runtime.metrics.set(
          'ragfresh_host_wait_ms_total',
          'Time waited for the shared per-host turn.',
          { host },
          ms,
        );
    };
    const waits = setInterval(publishWaits, 1_000);
    await stopped;
    clearInterval(waits);
    say('SIGTERM: finishing in-flight batches');
    await worker?.close();
    await publisher?.close();
    served?.server.close();
    return EXIT.ok;
  } finally {
    await runtime.close();
    await redis.quit().catch(() => {});
  }
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      config: { type: 'string' },
      role: { type: 'string' },
      name: { type: 'string' },
      'metrics-port': { type: 'string' },
      distributed: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
}
