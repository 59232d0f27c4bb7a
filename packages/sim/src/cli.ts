#!/usr/bin/env node
/**
 * `node packages/sim/dist/cli.js --hosts 3 --pages 20 [--seed 1] [--port 0]`
 * Starts the simulated web, prints each host's origin and entry points, and runs until Ctrl-C.
 */
import { parseArgs } from 'node:util';
import { errorMessage } from '@ragfresh/core';
import { startSimWeb } from './server.js';

function intOption(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n)) throw new Error(`--${name} must be an integer, got "${value}"`);
  return n;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      hosts: { type: 'string' },
      pages: { type: 'string' },
      seed: { type: 'string' },
      port: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help === true) {
    process.stdout.write('usage: ragfresh-sim [--hosts N] [--pages N] [--seed N] [--port BASE]\n');
    return;
  }
  const sim = await startSimWeb({
    hosts: intOption('hosts', values.hosts, 3),
    pagesPerHost: intOption('pages', values.pages, 20),
    seed: intOption('seed', values.seed, 1),
    port: intOption('port', values.port, 0),
  });
  const lines = [`ragfresh sim: seed ${sim.seed}, ${sim.urls().length} pages`];
  for (const host of sim.hosts()) {
    const info = sim.hostInfo(host);
    lines.push(
      `${host.padEnd(10)} ${info.origin}  (${info.flavor}, ${info.domain})  ${info.origin}/sitemap.xml  ${info.origin}/llms.txt`,
    );
  }
  lines.push('Press Ctrl-C to stop.');
  process.stdout.write(`${lines.join('\n')}\n`);
  const stop = () => {
    void sim.stop().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((err: unknown) => {
  process.stderr.write(`ragfresh-sim: ${errorMessage(err)}\n`);
  process.exit(1);
});
