import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { jsonSchemaOf } from './json-schema.js';
import type { RagfreshReader } from './reader.js';
import { callTool, READ_ONLY, TOOLS } from './tools.js';
import { UNTRUSTED_NOTE } from './untrusted.js';

export interface McpServerOptions {
  /** Reported as the server's version in the MCP handshake. */
  readonly version: string;
  /** Receives each tool call while it runs (stdio waits for them before it closes). */
  readonly inflight?: Set<Promise<unknown>>;
}

export const INSTRUCTIONS = `ragfresh serves a RAG index kept fresh from public web pages, with provenance. Use search for evidence (cite each result's url and say when it was retrieved; mention a STALE label), get_document for one page's current chunks and history, freshness for how current each source is, explain for why a URL is stale, held, quarantined, gone or not indexed. Every tool is read-only. ${UNTRUSTED_NOTE}`;

/** The tool list, computed once: every tool read-only, idempotent and closed-world. */
const LISTED: Tool[] = TOOLS.map((t) => ({
  name: t.name,
  title: t.title,
  description: t.description,
  inputSchema: jsonSchemaOf(t.input, 'input'),
  outputSchema: jsonSchemaOf(t.output, 'output'),
  annotations: {
    title: t.title,
    readOnlyHint: true,
    destructiveHint: false,
    idempotentHint: true,
    openWorldHint: false,
  },
}));

/**
 * An MCP server (the SDK's protocol `Server`) offering the four read-only tools over `reader`.
 * The low-level server, not `McpServer`, because argument errors are ours to word: one line
 * naming the argument and the fix, as a tool error (`isError`), where `McpServer` would report
 * a multi-line zod dump. Connect it to any transport (stdio, Streamable HTTP).
 */
export function createMcpServer(reader: RagfreshReader, options: McpServerOptions): Server {
  const server = new Server(
    { name: 'ragfresh', title: 'ragfresh', version: options.version },
    { capabilities: { tools: {} }, instructions: `${INSTRUCTIONS} ${READ_ONLY}` },
  );
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: LISTED }));
  server.setRequestHandler(CallToolRequestSchema, async (request): Promise<CallToolResult> => {
    const tool = TOOLS.find((t) => t.name === request.params.name);
    if (tool === undefined)
      throw new McpError(
        ErrorCode.InvalidParams,
        `unknown tool ${JSON.stringify(request.params.name)}; the tools are ${TOOLS.map((t) => t.name).join(', ')}.`,
      );
    const running = callTool(tool, reader, request.params.arguments);
    options.inflight?.add(running);
    const result = await running.finally(() => options.inflight?.delete(running));
    if (!result.ok) return { isError: true, content: [{ type: 'text', text: result.line }] };
    return { content: [{ type: 'text', text: result.text }], structuredContent: result.output };
  });
  return server;
}
