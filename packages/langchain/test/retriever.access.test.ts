import { MemoryConnector } from '@ragfresh/connector-memory';
import {
  documentId,
  type EmbeddedChunk,
  FIELDS,
  HashingEmbeddings,
  InMemoryStateStore,
  type PublishCandidate,
  Publisher,
} from '@ragfresh/core';
import { prepareDocument } from '@ragfresh/extract';
import { beforeAll, describe, expect, it } from 'vitest';
import { connectorRetriever, RagfreshRetriever } from '../src/index.js';
import { ConnectorVectorStore } from './helpers.js';

// The retriever passes its groups to the store's filter: public chunks plus its groups', with k
// counted after the scope (a public-only reader asking near scoped chunks still gets k).
const embeddings = new HashingEmbeddings();
const connector = new MemoryConnector();
const QUESTION = 'salary bands for engineers in the staff handbook';

async function candidate(
  name: string,
  paragraphs: readonly string[],
  access?: readonly string[],
): Promise<PublishCandidate> {
  const url = `https://intranet.example.org/${name}`;
  const id = documentId('handbook', url);
  const prepared = prepareDocument({
    documentId: id,
    sourceId: 'handbook',
    markdown: paragraphs.map((p, i) => `## Part ${i}\n\n${p} ${p}`).join('\n\n'),
    provenance: {
      url,
      finalUrl: url,
      title: name,
      retrievedAt: '2026-12-01T00:00:00.000Z',
      contentChangedAt: '2026-12-01T00:00:00.000Z',
      acquisition: 'raw',
      ...(access === undefined ? {} : { access }),
    },
    chunking: { maxTokens: 24, minTokens: 4 },
  });
  const vectors = await embeddings.embedDocuments(prepared.chunks.map((c) => c.text));
  const chunks: EmbeddedChunk[] = prepared.chunks.map((c, i) => ({ ...c, embedding: vectors[i]! }));
  return {
    documentId: id,
    versionId: prepared.versionId,
    sourceId: 'handbook',
    url,
    contentHash: prepared.contentHash,
    textChars: prepared.textChars,
    text: prepared.text,
    chunks,
  };
}

const sources = (docs: readonly { metadata: Record<string, unknown> }[]) =>
  docs.map((d) => String(d.metadata[FIELDS.url]).split('/').at(-1));

beforeAll(async () => {
  await connector.open({ dimensions: (await embeddings.embedQuery('x')).length });
  const publisher = await Publisher.open({ connector, state: new InMemoryStateStore() });
  const salaries = await candidate(
    'salaries',
    [
      'Salary bands for engineers are set in the staff handbook each spring.',
      'Staff handbook salary bands for senior engineers and managers.',
      'Engineers move between salary bands after the handbook review.',
    ],
    ['hr'],
  );
  const open = await candidate('holidays', [
    'Public holidays are listed on the careers site.',
    'The office closes between Christmas and New Year.',
  ]);
  // Each document is cut into several chunks, so k = 2 can be filled from either one.
  expect(salaries.chunks.length).toBeGreaterThanOrEqual(2);
  expect(open.chunks.length).toBeGreaterThanOrEqual(2);
  const report = await publisher.publish([salaries, open]);
  expect(report.documents.map((d) => d.outcome)).toEqual(['published', 'published']);
  await publisher.close();
});

describe('RagfreshRetriever({ access })', () => {
  it('connector mode: no groups sees public chunks only, k of them; hr sees its own', async () => {
    const publicOnly = connectorRetriever({
      connector,
      embeddings,
      k: 2,
      collapseDuplicates: false,
    });
    const got = await publicOnly.invoke(QUESTION);
    expect(got).toHaveLength(2);
    expect(new Set(sources(got))).toEqual(new Set(['holidays']));
    const hr = connectorRetriever({ connector, embeddings, k: 2, access: ['hr'] });
    expect(sources(await hr.invoke(QUESTION))).toEqual(['salaries', 'salaries']);
  });

  it('vector-store mode: the dialect ANDs the scope into the store filter', async () => {
    const vectorStore = new ConnectorVectorStore(connector, embeddings);
    const make = (access?: readonly string[]) =>
      new RagfreshRetriever({
        vectorStore,
        dialect: 'memory',
        connector,
        k: 2,
        collapseDuplicates: false,
        ...(access === undefined ? {} : { access }),
      });
    expect(new Set(sources(await make().invoke(QUESTION)))).toEqual(new Set(['holidays']));
    expect(new Set(sources(await make(['sales']).invoke(QUESTION)))).toEqual(new Set(['holidays']));
    expect(sources(await make(['sales', 'hr']).invoke(QUESTION))).toEqual(['salaries', 'salaries']);
  });

  it('a bad group name is refused when the retriever is built', () => {
    expect(() => connectorRetriever({ connector, embeddings, access: ['h r'] })).toThrow(
      /"h r" is not a group name/,
    );
  });
});
