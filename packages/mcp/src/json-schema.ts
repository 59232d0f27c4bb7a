import { z } from 'zod';

/** A tool schema as the JSON Schema both the MCP SDK and `ai` expect: draft 7, an object. */
export function jsonSchemaOf(
  schema: z.ZodType,
  io: 'input' | 'output',
): { type: 'object'; [key: string]: unknown } {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, { target: 'draft-7', io });
  return { ...rest, type: 'object' };
}
