import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { RagfreshReader } from './reader.js';
import { createMcpServer, type McpServerOptions } from './server.js';

/**
 * Serves the tools on this process's stdin/stdout (what an agent host spawns) until stdin ends
 * or the host closes the connection; resolves then, once the calls still running have answered
 * (`printf '…' | ragfresh mcp` gets every response). stdout carries JSON-RPC only: everything
 * else goes to stderr.
 */
export async function serveMcpStdio(
  reader: RagfreshReader,
  options: McpServerOptions,
): Promise<void> {
  const inflight = new Set<Promise<unknown>>();
  const server = createMcpServer(reader, { ...options, inflight });
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    server.onclose = () => resolve();
    process.stdin.once('end', () => resolve());
    process.stdin.once('close', () => resolve());
  });
  await server.connect(transport);
  await closed;
  while (inflight.size > 0) await Promise.allSettled([...inflight]);
  // The responses are sent a tick after their calls settle.
  await new Promise((resolve) => setImmediate(resolve));
  await server.close();
}
