import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { serve } from '@hono/node-server';
import { isRagfreshError } from '@ragfresh/core';
import { MemoryRawSnapshotStore } from '@ragfresh/fetch';
import { badAllowedHost, dashboardHosts } from '../allowed-hosts.js';
import { loadConfig, type ResolvedConfig } from '../config.js';
import { EXIT } from '../exit.js';
import { createLogger, type Logger } from '../log.js';
import { openRuntime } from '../runtime.js';
import { createUiApp, type Decide } from './server.js';
import { VersionTexts } from './versions.js';

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

const usage = (line: string): number => {
  process.stderr.write(`ragfresh: ${line}\n`);
  return EXIT.usage;
};

/**
 * A review decision taken in the browser, the way `ragfresh review approve|reject` takes it: a
 * runtime holding the publish lease for the decision only (the dashboard itself never holds it,
 * so refreshes keep running), `engine.approveMany` / `engine.reject` with the same reviewer name,
 * and the same summary line on stdout.
 */
function decider(config: ResolvedConfig, by: string, log: Logger): Decide {
  let queue: Promise<unknown> = Promise.resolve();
  return (action, ids) => {
    const run = async () => {
      let rt: Awaited<ReturnType<typeof openRuntime>>;
      try {
        rt = await openRuntime(config, { log });
      } catch (err) {
        if (isRagfreshError(err, 'LEASE_HELD'))
          return { ok: false, message: err.message.replace(/^\[ragfresh\] (\[[^\]]+\] )?/, '') };
        throw err;
      }
      try {
        const pending = (await rt.state.listReviewItems({ status: 'pending' })).filter((i) =>
          ids.includes(i.id),
        );
        const missing = ids.filter((id) => !pending.some((i) => i.id === id));
        if (missing.length > 0)
          return {
            ok: false,
            message: `no pending review item ${missing.map((m) => `"${m}"`).join(', ')}; nothing done.`,
          };
        let line: string;
        let ok: boolean;
        if (action === 'reject') {
          let n = 0;
          for (const id of ids) if (await rt.engine.reject(id, by)) n++;
          line = `rejected ${n} of ${ids.length} review items.`;
          ok = n === ids.length;
        } else {
          const report = await rt.engine.approveMany(ids, by);
          line = [
            `approved ${report.approved.length} of ${ids.length} review items.`,
            ...report.blocked.map((b) => `  blocked ${b}`),
          ].join('\n');
          ok = report.blocked.length === 0;
        }
        process.stdout.write(`${line} (by ${by}: ${ids.join(', ')})\n`);
        return { ok, message: `${line} (reviewer ${by})` };
      } finally {
        await rt.close();
      }
    };
    const next = queue.then(run, run);
    queue = next.catch(() => undefined);
    return next;
  };
}

/**
 * `ragfresh ui [--port n] [--host h] [--allowed-host name]... [--by name] [--runs n]
 * [--config file]`.
 */
export async function runUiCommand(argv: readonly string[]): Promise<number> {
  let values: Record<string, string | boolean | string[] | undefined>;
  try {
    ({ values } = parseArgs({
      args: argv.slice(1),
      allowPositionals: false,
      options: {
        config: { type: 'string' },
        port: { type: 'string', default: '7420' },
        host: { type: 'string', default: '127.0.0.1' },
        'allowed-host': { type: 'string', multiple: true, default: [] },
        by: { type: 'string', default: process.env.USER ?? 'cli' },
        runs: { type: 'string', default: '30' },
        quiet: { type: 'boolean', default: false },
        json: { type: 'boolean', default: false },
      },
    }));
  } catch (err) {
    return usage(`${(err as Error).message}; see \`ragfresh --help\`.`);
  }
  const port = Number(values.port);
  const runs = Number(values.runs);
  if (!Number.isInteger(port) || port < 0 || port > 65_535)
    return usage(
      `ui --port ${String(values.port)} is not a port number; give an integer (0 picks a free one).`,
    );
  if (!Number.isInteger(runs) || runs < 1)
    return usage(
      `ui --runs ${String(values.runs)} must be a positive integer (runs per source in the charts).`,
    );
  const host = String(values.host);
  const extraHosts = values['allowed-host'] as string[];
  for (const name of extraHosts) {
    const bad = badAllowedHost(name);
    if (bad !== undefined) return usage(bad);
  }
  const by = String(values.by);
  const config = await loadConfig(values.config as string | undefined);
  const log = createLogger({ quiet: values.quiet === true, json: true });
  const rt = await openRuntime(config, { log, role: 'read' });
  const texts = new VersionTexts(rt.snapshots ?? new MemoryRawSnapshotStore(), rt.pipeline);
  const loopback = LOOPBACK.has(host);
  const token = process.env.RAGFRESH_UI_TOKEN ?? randomBytes(24).toString('base64url');
  let allowed: string[] = [];
  const hostPart = host.includes(':') ? `[${host}]` : host;
  const app = createUiApp({
    pages: { config, state: rt.state, connector: rt.connector, texts, runs },
    decide: decider(config, by, log),
    token,
    loopback,
    allowedHosts: () => allowed,
  });
  const server = serve({ fetch: app.fetch, port, hostname: host });
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  const bound = (server.address() as AddressInfo).port;
  allowed = dashboardHosts(host, bound, extraHosts);
  const base = `http://${hostPart}:${bound}`;
  process.stdout.write(
    `ragfresh ui: ${base}/ (${loopback ? 'read-only until you log in' : 'bound beyond loopback: every page needs the login'})\n` +
      `ragfresh ui: login for actions (reviewer "${by}"): ${base}/login?token=${token}\n`,
  );
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await rt.close();
  return EXIT.ok;
}
