import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { serveMcpStdio, startMcpHttp } from '@ragfresh/mcp';
import { dashboardHosts } from './allowed-hosts.js';
import { loadConfig } from './config.js';
import { EXIT } from './exit.js';
import { createLogger } from './log.js';
import { openReader } from './reader.js';

const usage = (line: string): number => {
  process.stderr.write(`ragfresh: ${line}\n`);
  return EXIT.usage;
};

const VERSION = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
    version: string;
  }
).version;

/** `--access g1,g2` (repeatable): the server's reader groups, the same form as `query --access`. */
function accessGroups(values: readonly string[]): string[] {
  return [...new Set(values.flatMap((v) => v.split(',')).map((g) => g.trim()))].filter(
    (g) => g !== '',
  );
}

/**
 * `ragfresh mcp [--http <port>] [--access g1,g2] [--config file]`: the read-only tools over
 * MCP, on stdio (what an agent host spawns) or on Streamable HTTP at 127.0.0.1 with a bearer
 * token. Who reads (the access groups) is fixed here, never by a tool call.
 */
export async function runMcpCommand(argv: readonly string[]): Promise<number> {
  let values: { config?: string; http?: string; access: string[]; quiet: boolean };
  try {
    ({ values } = parseArgs({
      args: argv.slice(1),
      allowPositionals: false,
      options: {
        config: { type: 'string' },
        http: { type: 'string' },
        access: { type: 'string', multiple: true, default: [] },
        quiet: { type: 'boolean', default: false },
      },
    }));
  } catch (err) {
    return usage(`${(err as Error).message}; see \`ragfresh --help\`.`);
  }
  const port = values.http === undefined ? undefined : Number(values.http);
  if (port !== undefined && (!/^\d+$/.test(values.http ?? '') || port > 65_535))
    return usage(
      `mcp --http ${String(values.http)} is not a port number; give an integer (0 picks a free one).`,
    );
  const config = await loadConfig(values.config);
  // stdout is the protocol on stdio: the log goes to stderr, as JSON lines.
  const log = createLogger({ quiet: values.quiet, json: true });
  const reader = await openReader(config, {
    identity: { access: accessGroups(values.access) },
    log,
  });
  try {
    if (port === undefined) {
      await serveMcpStdio(reader, { version: VERSION });
      return EXIT.ok;
    }
    const token = process.env.RAGFRESH_MCP_TOKEN ?? randomBytes(24).toString('base64url');
    const server = await startMcpHttp({
      reader,
      port,
      token,
      version: VERSION,
      allowedHosts: (bound) => dashboardHosts('127.0.0.1', bound),
    });
    process.stdout.write(
      `ragfresh mcp: ${server.url} (Streamable HTTP, loopback only, read-only tools)\n` +
        `ragfresh mcp: token ${token} (send "Authorization: Bearer <token>" with every request)\n`,
    );
    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    await server.close();
    return EXIT.ok;
  } finally {
    await reader.close();
  }
}
