import { jsonSchema, type Tool, tool } from 'ai';
import type { z } from 'zod';
import { jsonSchemaOf } from './json-schema.js';
import type { RagfreshReader } from './reader.js';
import type {
  ExplainInput,
  ExplainOutput,
  FreshnessInput,
  FreshnessOutput,
  GetDocumentInput,
  GetDocumentOutput,
  SearchInput,
  SearchOutput,
} from './schemas.js';
import {
  callTool,
  explainTool,
  freshnessTool,
  getDocumentTool,
  issuesLine,
  type RagfreshTool,
  searchTool,
} from './tools.js';

/**
 * The tool set `ragfreshTools()` returns, keyed by the MCP tool names (a type, not an interface,
 * so it is assignable to `ai`'s `ToolSet`).
 */
export type RagfreshToolSet = {
  readonly search: Tool<SearchInput, SearchOutput>;
  readonly get_document: Tool<GetDocumentInput, GetDocumentOutput>;
  readonly freshness: Tool<FreshnessInput, FreshnessOutput>;
  readonly explain: Tool<ExplainInput, ExplainOutput>;
};

/**
 * The AI SDK form of one tool (description, schema, execute, model output), assembled here and
 * passed to `tool()` where the types are concrete.
 */
function parts<I extends z.ZodType, O extends z.ZodType>(
  t: RagfreshTool<I, O>,
  reader: RagfreshReader,
) {
  return {
    description: t.description,
    // The same JSON Schema the MCP server lists, checked by the same zod schema, so a bad
    // argument is the same one line here as there.
    inputSchema: jsonSchema<z.output<I>>(jsonSchemaOf(t.input, 'input'), {
      validate: (value) => {
        const parsed = t.input.safeParse(value ?? {});
        return parsed.success
          ? { success: true, value: parsed.data }
          : { success: false, error: new Error(issuesLine(t.name, parsed.error)) };
      },
    }),
    execute: async (input: z.output<I>): Promise<z.output<O>> => {
      const result = await callTool(t, reader, input);
      if (!result.ok) throw new Error(result.line);
      return result.output as z.output<O>;
    },
    // The model reads what an MCP host's model reads: provenance first, page text quoted.
    toModelOutput: ({ output }: { output: z.output<O> }) => ({
      type: 'text' as const,
      value: t.render(output),
    }),
  };
}

/**
 * The four read-only ragfresh tools for the Vercel AI SDK's `generateText` / `streamText`
 * (`tools: ragfreshTools(reader)`), the same definitions `ragfresh mcp` serves. The reader (and
 * so its access groups) is fixed here, never chosen by the model.
 */
export function ragfreshTools(reader: RagfreshReader): RagfreshToolSet {
  return {
    search: tool(parts(searchTool, reader)),
    get_document: tool(parts(getDocumentTool, reader)),
    freshness: tool(parts(freshnessTool, reader)),
    explain: tool(parts(explainTool, reader)),
  };
}
