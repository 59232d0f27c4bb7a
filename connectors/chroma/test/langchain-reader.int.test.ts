import { Chroma } from '@langchain/community/vectorstores/chroma';
import { FIELDS } from '@ragfresh/core';
import { ChromaClient } from 'chromadb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalChromaServer, startLocalChroma } from '../src/fixture.js';
import {
  ChromaConnector,
  CURRENT_FLAG_WHERE,
  epochViewWhere,
  readChromaEpoch,
} from '../src/index.js';
import { DIMS, makeChunks, uniqueName, vector } from './chunks.js';

let server: LocalChromaServer;

beforeAll(async () => {
  server = await startLocalChroma();
});

afterAll(async () => {
  await server?.stop();
});

/** Deterministic stand-in for an embeddings model: every query embeds to the same vector. */
const embeddings = {
  async embedQuery(): Promise<number[]> {
    return vector(0);
  },
  async embedDocuments(texts: string[]): Promise<number[][]> {
    return texts.map(() => vector(0));
  },
};

function langchainReader(collectionName: string, filter?: object): Chroma {
  const url = new URL(server.url);
  return new Chroma(embeddings as never, {
    collectionName,
    clientParams: { host: url.hostname, port: Number(url.port) },
    ...(filter === undefined ? {} : { filter }),
  });
}

describe("LangChain's Chroma class reads a ragfresh collection", () => {
  it('returns only current-view chunks with the documented epoch and flag filters', async () => {
    const name = uniqueName('lc');
    const c = new ChromaConnector({ url: server.url, collection: name });
    await c.open({ dimensions: DIMS });
    // Epoch 1: a:doc v1 and b:doc v1 published and flagged current.
    const aV1 = makeChunks({
      documentId: 'a:doc',
      versionId: 'v1',
      count: 3,
      from: 1,
      current: true,
    });
    const bV1 = makeChunks({
      documentId: 'b:doc',
      versionId: 'v1',
      count: 2,
      from: 1,
      current: true,
    });
    await c.upsert([...aV1, ...bV1]);
    await c.advanceEpoch(0, 1);
    // Mid-publication of a:doc v2 (target epoch 2): staged, old version bounded, epoch not advanced.
    const aV2 = makeChunks({ documentId: 'a:doc', versionId: 'v2', count: 2, from: 2 });
    await c.upsert(aV2);
    await c.patchValidity('a:doc', 'v1', { to: 2 });

    const client = new ChromaClient({
      host: new URL(server.url).hostname,
      port: Number(new URL(server.url).port),
    });
    const e1 = await readChromaEpoch(client, name);
    expect(e1).toBe(1);
    const before = await langchainReader(name, epochViewWhere(e1)).similaritySearch('anything', 20);
    expect(
      before.map((d) => `${d.metadata[FIELDS.documentId]}@${d.metadata[FIELDS.versionId]}`).sort(),
    ).toEqual([...Array(3).fill('a:doc@v1'), ...Array(2).fill('b:doc@v1')]);
    expect(
      before.every((d) => typeof d.pageContent === 'string' && d.pageContent.includes('chunk')),
    ).toBe(true);
    expect(before[0]!.metadata[FIELDS.url]).toMatch(/^https:\/\/example\.org\//);

    // Promote: advance the epoch, then maintain the flag (new current first, then old cleared).
    await c.advanceEpoch(1, 2);
    const e2 = await readChromaEpoch(client, name);
    expect(e2).toBe(2);
    const after = await langchainReader(name, epochViewWhere(e2)).similaritySearch('anything', 20);
    expect(
      after.map((d) => `${d.metadata[FIELDS.documentId]}@${d.metadata[FIELDS.versionId]}`).sort(),
    ).toEqual([...Array(2).fill('a:doc@v2'), ...Array(2).fill('b:doc@v1')]);
    // A reader still holding epoch 1 keeps a consistent snapshot of the old state.
    const stale = await langchainReader(name, epochViewWhere(1)).similaritySearch('anything', 20);
    expect(
      stale
        .filter((d) => d.metadata[FIELDS.documentId] === 'a:doc')
        .every((d) => d.metadata[FIELDS.versionId] === 'v1'),
    ).toBe(true);

    await c.patchValidity('a:doc', 'v2', { current: true });
    const overlap = await langchainReader(name, CURRENT_FLAG_WHERE).similaritySearch(
      'anything',
      20,
    );
    // The flag reader's documented weaker guarantee: briefly both versions, never neither.
    expect(
      new Set(
        overlap
          .filter((d) => d.metadata[FIELDS.documentId] === 'a:doc')
          .map((d) => d.metadata[FIELDS.versionId]),
      ),
    ).toEqual(new Set(['v1', 'v2']));
    await c.patchValidity('a:doc', 'v1', { current: false });
    const flagged = await langchainReader(name, CURRENT_FLAG_WHERE).similaritySearchWithScore(
      'anything',
      20,
    );
    expect(
      flagged
        .map(([d]) => `${d.metadata[FIELDS.documentId]}@${d.metadata[FIELDS.versionId]}`)
        .sort(),
    ).toEqual([...Array(2).fill('a:doc@v2'), ...Array(2).fill('b:doc@v1')]);
    // LangChain's score is Chroma's raw distance (lower is closer).
    expect(flagged.every(([, score]) => typeof score === 'number' && score >= 0)).toBe(true);
    // The unfiltered reader sees staged and retired chunks too: the filter is required.
    const unfiltered = await langchainReader(name).similaritySearch('anything', 20);
    expect(unfiltered).toHaveLength(7);
  });
});
