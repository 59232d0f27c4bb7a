import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OpenAIEmbeddings } from '@langchain/openai';
import { cosineSimilarity, FIELDS, HashingEmbeddings, readSpaceRecord } from '@ragfresh/core';
import { startSimWeb } from '@ragfresh/sim';
import { describe, expect, it } from 'vitest';
import { migrateEmbeddingSpace } from '../src/migrate-space.js';
import { composeOnDisk } from './fixtures/migration-index.mjs';

// The real remote-embeddings path: @langchain/openai's OpenAIEmbeddings (and the openai client
// under it) against a loopback stand-in of the OpenAI embeddings HTTP API. What it proves: the
// client's requests, batching, float/base64 decoding and errors reach the migration as they
// would from api.openai.com, and the migration retries a 429 after its Retry-After and a failed
// batch, publishing nothing half. What it does not: OpenAI's own models, limits or latency (the
// stand-in's vectors are HashingEmbeddings of a fixed seed, so they can be checked exactly).

const DIMS = 48;
const model = new HashingEmbeddings({ dimensions: DIMS, seed: 42 });

interface StandIn {
  readonly url: string;
  /** Texts answered with vectors (failed attempts embed nothing). */
  embedded: number;
  requests: number;
  readonly refused: { status: number; at: number }[];
  readonly answered: { at: number }[];
  close(): Promise<void>;
}

/** POST /v1/embeddings; the 2nd request gets 429 + Retry-After: 1, the 4th a 500. */
async function openAiStandIn(): Promise<StandIn> {
  const self: StandIn = {
    url: '',
    embedded: 0,
    requests: 0,
    refused: [],
    answered: [],
    close: async () => {},
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    req.on('data', (c: Buffer) => {
      body += c.toString();
    });
    req.on('end', () => {
      self.requests++;
      const json = (status: number, value: unknown, headers: Record<string, string> = {}) => {
        res.writeHead(status, { 'content-type': 'application/json', ...headers });
        res.end(JSON.stringify(value));
      };
      if (req.method !== 'POST' || req.url !== '/v1/embeddings')
        return json(404, {
          error: { message: `no route ${req.url}`, type: 'invalid_request_error' },
        });
      if (req.headers.authorization !== 'Bearer sk-test')
        return json(401, { error: { message: 'bad key', type: 'invalid_request_error' } });
      if (self.requests === 2) {
        self.refused.push({ status: 429, at: Date.now() });
        return json(
          429,
          {
            error: { message: 'Rate limit reached', type: 'requests', code: 'rate_limit_exceeded' },
          },
          { 'retry-after': '1' },
        );
      }
      if (self.requests === 4) {
        self.refused.push({ status: 500, at: Date.now() });
        return json(500, { error: { message: 'The server had an error', type: 'server_error' } });
      }
      const parsed = JSON.parse(body) as { input: string | string[]; encoding_format?: string };
      const inputs = Array.isArray(parsed.input) ? parsed.input : [parsed.input];
      self.embedded += inputs.length;
      self.answered.push({ at: Date.now() });
      json(200, {
        object: 'list',
        model: 'text-embedding-stand-in',
        data: inputs.map((text, index) => {
          const v = model.embedText(text);
          return {
            object: 'embedding',
            index,
            embedding:
              parsed.encoding_format === 'base64'
                ? Buffer.from(new Float32Array(v).buffer).toString('base64')
                : v,
          };
        }),
        usage: { prompt_tokens: inputs.length, total_tokens: inputs.length },
      });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return Object.assign(self, {
    url: `http://127.0.0.1:${port}/v1`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  });
}

describe('migrate embeddings to OpenAIEmbeddings (loopback stand-in of the OpenAI API)', () => {
  it('re-embeds every chunk once through the real client, after a 429 and a failed batch', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ragfresh-openai-'));
    await using sim = await startSimWeb({ seed: 3, hosts: 1, pagesPerHost: 5 });
    const stand = await openAiStandIn();
    const index = { dir, sitemap: `${sim.origin(sim.hosts()[0]!)}/sitemap.xml` };
    try {
      const first = await composeOnDisk(
        index,
        new HashingEmbeddings({ dimensions: 32 }),
        'refresh',
      );
      await first.engine.refresh({ all: true });
      await first.close();
      const requests = sim.log().length;

      const openai = () =>
        new OpenAIEmbeddings({
          model: 'text-embedding-3-small',
          dimensions: DIMS,
          apiKey: 'sk-test',
          configuration: { baseURL: stand.url },
          batchSize: 4,
          // The migration retries (it reads Retry-After); the client and LangChain's caller not.
          maxRetries: 0,
        });
      const rt = await composeOnDisk(index, openai(), 'migrate');
      let report: Awaited<ReturnType<typeof migrateEmbeddingSpace>>;
      try {
        expect(rt.space).toMatchObject({
          className: 'OpenAIEmbeddings',
          model: 'text-embedding-3-small',
          dimensions: DIMS,
        });
        stand.embedded = 0; // the space probe is not a chunk
        report = await migrateEmbeddingSpace(rt, { batchSize: 4, concurrency: 1, backoffMs: 50 });
      } finally {
        await rt.close();
      }
      expect(report.outcome).toBe('migrated');
      expect(report.chunks).toBeGreaterThan(8);
      // Every chunk embedded exactly once; two refused attempts retried.
      expect(stand.embedded).toBe(report.chunks);
      expect(report.embedded).toBe(report.chunks);
      expect(report.retries).toBe(2);
      expect(stand.refused.map((r) => r.status)).toEqual([429, 500]);
      // The 429's retry waited the Retry-After second, not the 50 ms backoff.
      const after429 = stand.answered.find((a) => a.at > stand.refused[0]!.at)!;
      expect(after429.at - stand.refused[0]!.at).toBeGreaterThanOrEqual(950);
      expect(sim.log().length).toBe(requests);

      // Readers now query through the same client; every hit is the stand-in model's vector.
      const reader = await composeOnDisk(index, openai(), 'read');
      try {
        const record = await readSpaceRecord(reader.state);
        expect(record?.active.id).toBe(reader.space.id);
        const q = await reader.embeddings.embedQuery('pricing and plans');
        const hits = await reader.connector.searchCurrent(q, 50);
        expect(hits).toHaveLength(report.chunks);
        for (const h of hits) {
          expect(h.metadata[FIELDS.space]).toBe(reader.space.id);
          expect(h.score).toBeCloseTo(cosineSimilarity(q, model.embedText(h.text)), 4);
        }
      } finally {
        await reader.close();
      }
    } finally {
      await stand.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
