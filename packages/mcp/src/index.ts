export { MCP_PATH, type McpHttpOptions, type McpHttpServer, startMcpHttp } from './http.js';
export type { RagfreshReader, ReaderIdentity } from './reader.js';
export * from './schemas.js';
export { createMcpServer, INSTRUCTIONS, type McpServerOptions } from './server.js';
export { serveMcpStdio } from './stdio.js';
export {
  callTool,
  explainTool,
  freshnessTool,
  getDocumentTool,
  type RagfreshTool,
  READ_ONLY,
  searchTool,
  TOOLS,
  type ToolCallResult,
} from './tools.js';
export { quoteUntrusted, UNTRUSTED_NOTE } from './untrusted.js';
