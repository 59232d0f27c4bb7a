import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ragfreshTools } from '@ragfresh/mcp/ai';
import { type SimWeb, startSimWeb } from '@ragfresh/sim';
import { generateText, isStepCount } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, type OpenedReader, openReader, openRuntime } from '../src/index.js';

// The Vercel AI SDK's own mock model (`ai/test`) drives ragfreshTools() over a real project:
// a loopback site refreshed into LanceDB, read through the same reader `ragfresh mcp` serves.

type CallOptions = MockLanguageModelV4['doGenerateCalls'][number];
type GenerateResult = Awaited<ReturnType<MockLanguageModelV4['doGenerate']>>;

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};
const call = (id: string, toolName: string, input: unknown): GenerateResult => ({
  content: [{ type: 'tool-call', toolCallId: id, toolName, input: JSON.stringify(input) }],
  finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
  usage,
  warnings: [],
});

/** What the model was sent back for tool call `id` (the tool message's part). */
function toolOutput(options: CallOptions, id: string) {
  for (const m of options.prompt)
    if (m.role === 'tool')
      for (const p of m.content)
        if (p.type === 'tool-result' && p.toolCallId === id) return p.output;
  return undefined;
}

describe('ragfreshTools() in generateText, driven by MockLanguageModelV4', () => {
  let sim: SimWeb;
  let dir: string;
  let pages: string[];
  let reader: OpenedReader;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ragfresh-ai-'));
    sim = await startSimWeb({ seed: 37, hosts: 1, pagesPerHost: 4 });
    pages = sim.urls(sim.hosts()[0]!).filter((u) => new URL(u).pathname !== '/');
    writeFileSync(
      join(dir, 'ragfresh.config.json'),
      JSON.stringify({
        userAgent: 'ragfresh-test/0.1 (+https://example.org/bot)',
        sources: [{ id: 'docs', urls: pages, freshnessObjective: '30d' }],
        fetch: { minIntervalMs: 0, allowPrivateNetworks: true, robots: false },
      }),
    );
    const config = await loadConfig(join(dir, 'ragfresh.config.json'));
    const rt = await openRuntime(config);
    try {
      await rt.engine.refresh({ all: true });
    } finally {
      await rt.close();
    }
    reader = await openReader(config);
  });
  afterAll(async () => {
    await reader?.close();
    await sim?.stop();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('a bad call comes back as a one-line tool error, the next call cites the fetched URL with quoted text', async () => {
    const target = pages[1]!;
    const phrase = sim.pageFacts(target).phrase;
    const model = new MockLanguageModelV4({
      doGenerate: [
        call('bad', 'search', { query: phrase, k: 500 }),
        call('good', 'search', { query: phrase, k: 3 }),
        {
          content: [{ type: 'text', text: `See ${target}.` }],
          finishReason: { unified: 'stop', raw: 'stop' },
          usage,
          warnings: [],
        },
      ],
    });
    const result = await generateText({
      model,
      tools: ragfreshTools(reader),
      stopWhen: isStepCount(3),
      prompt: 'What does the page say?',
    });
    expect(model.doGenerateCalls).toHaveLength(3);
    // The model was offered the four tools with the MCP server's schemas.
    const offered = model.doGenerateCalls[0]!.tools ?? [];
    expect(offered.map((t) => t.name)).toEqual(['search', 'get_document', 'freshness', 'explain']);

    const [bad, good] = result.steps;
    expect(bad!.content.find((p) => p.type === 'tool-error')).toBeDefined();
    const error = toolOutput(model.doGenerateCalls[1]!, 'bad');
    expect(error?.type).toBe('error-text');
    expect(error?.type === 'error-text' ? error.value : '').toMatch(
      /search: k: too big: expected number to be <=50; fix the arguments and call again\.$/,
    );

    const [res] = good!.toolResults;
    const output = res!.output as {
      results: { rank: number; url: string; retrievedAt: string; text: string }[];
    };
    // Retrieval on hashing embeddings ranks the page near the top, not always first.
    const top = output.results.find((h) => h.url === target)!;
    expect(top, JSON.stringify(output.results.map((h) => h.url))).toBeDefined();
    expect(top.text).toContain(phrase);
    const state = (await reader.getDocument({ url: target, maxChunks: 1 })).timestamps;
    expect(top.retrievedAt).toBe(state.retrievedAt);
    // What the model reads: the rendered, quoted form, not raw page text as a JSON blob.
    const sent = toolOutput(model.doGenerateCalls[2]!, 'good');
    expect(sent?.type).toBe('text');
    const value = sent?.type === 'text' ? sent.value : '';
    expect(value).toContain(`[${top.rank}] ${target}`);
    expect(value).toContain(`Fetched: ${top.retrievedAt}`);
    expect(value).toMatch(/<untrusted-page-text source="[^"]+">\n> /);
    expect(result.text).toBe(`See ${target}.`);
  });
});
