import {
  chunkUuid,
  decodeChunkMetadata,
  FIELDS,
  type FlatMetadata,
  type ListedChunk,
  reasonLine,
  toStoredChunk,
} from '@ragfresh/core';
import type { ConformanceCase } from '../types.js';
import { chunkIdsOf, listInView, sameMembers, sameValue } from './helpers.js';

const UNICODE_SAMPLES = [
  'Grüße aus Köln — naïve café',
  '日本語のテキストと中文文本',
  'עברית: שלום עולם',
  'العربية: مرحبا بالعالم',
  'emoji 🚀🧪👩🏽‍💻 and 🇯🇵',
  'combining: e\u0301 vs é',
];

/** Text of about `bytes` UTF-8 bytes mixing every script above. */
function longText(bytes: number): string {
  let out = '';
  let i = 0;
  while (Buffer.byteLength(out, 'utf8') < bytes) {
    out += `${UNICODE_SAMPLES[i % UNICODE_SAMPLES.length]} · ${i}\n`;
    i++;
  }
  return out.normalize('NFC');
}

function diffMetadata(expected: FlatMetadata, actual: FlatMetadata): string[] {
  const problems: string[] = [];
  for (const [key, value] of Object.entries(expected)) {
    if (!sameValue(actual[key], value))
      problems.push(`${key}: wrote ${JSON.stringify(value)}, read ${JSON.stringify(actual[key])}`);
  }
  for (const [key, value] of Object.entries(actual)) {
    if (value === null || value === undefined)
      problems.push(`${key} read back as ${String(value)}`);
  }
  return problems;
}

export const metadataRoundTrip: ConformanceCase = {
  id: 'metadata-roundtrip',
  title: 'metadata and text round-trip exactly',
  guarantee:
    'Text (8 KB of Unicode: emoji, CJK, RTL, combining marks) and every metadata field (strings, heading_path as a JSON array, numbers, booleans) come back identical, with the same types and no nulls, through listChunks and query.',
  whenItFails:
    'Metadata encoding in _upsert and decoding in _list / _query (driver type traps, authoring.md §5): numbers must stay numbers (not strings or bigint), booleans booleans (not 0/1 or "true"), no nulls added, text must not be truncated or re-encoded, vectors read back as plain numbers; check the store\'s metadata size limit against maxMetadataBytes.',
  appliesTo: () => true,
  declared: (c) =>
    `exact round trip${c.maxMetadataBytes === undefined ? '' : ` within ${c.maxMetadataBytes} B`}`,
  async run(ctx) {
    const connector = await ctx.connector();
    const limit = ctx.capabilities.maxMetadataBytes;
    const textBytes = Math.min(8192, limit === undefined ? 8192 : Math.floor((limit - 2048) / 2));
    const heading = ['Über uns', '日本語 見出し', 'כותרת', '🚀 Launch "quoted" > nested'];
    const v = ctx.corpus.version(
      'unicode',
      [
        { text: longText(textBytes), headingPath: heading },
        { text: 'short 🇯🇵 chunk', headingPath: [] },
      ],
      {
        provenance: {
          title: 'Titre — 标题 — כותרת — 🚀',
          region: 'eu-west',
          authority: 'official',
          canonicalUrl: 'https://conformance.ragfresh.test/canonical/%E6%97%A5',
          sourceModifiedAt: '2025-12-31T23:59:59.000Z',
        },
      },
    );
    const epoch = await connector.readEpoch();
    const stored = v.chunks.map((c) => toStoredChunk(c, epoch + 1));
    await ctx.time('upsert', () => connector.upsert(stored));
    let mismatches = 0;
    await ctx.eventually('roundtrip', async () => {
      const listed = await connector.listChunks(v.documentId, v.versionId, {
        withEmbeddings: true,
      });
      ctx.check(
        listed.length === stored.length,
        `listed ${listed.length} chunks, wrote ${stored.length}`,
      );
      mismatches = 0;
      for (const written of stored) {
        const row = listed.find(
          (r) => r.metadata[FIELDS.chunkId] === written.metadata[FIELDS.chunkId],
        );
        if (row === undefined) {
          ctx.check(false, `chunk ${written.id} not listed`);
          mismatches++;
          continue;
        }
        const problems = diffMetadata(written.metadata, row.metadata);
        if (row.text !== written.text)
          problems.push(
            `text: wrote ${Buffer.byteLength(written.text)} B, read ${Buffer.byteLength(row.text)} B${row.text.length < written.text.length ? ' (truncated?)' : ''}`,
          );
        const embedding = row.embedding ?? [];
        if (
          embedding.length !== written.embedding.length ||
          embedding.some((x, i) => Math.abs(x - written.embedding[i]!) > 1e-4)
        ) {
          problems.push('embedding differs beyond float32 rounding');
        }
        const expectedId = ctx.capabilities.idForm === 'uuid' ? chunkUuid(written.id) : written.id;
        if (row.id !== expectedId) problems.push(`id ${row.id}, expected ${expectedId}`);
        mismatches += problems.length;
        ctx.check(
          problems.length === 0,
          `listChunks ${written.id}: ${problems.slice(0, 4).join('; ')}`,
        );
      }
      const decoded = decodeChunkMetadata(
        listed.find((r) => r.metadata[FIELDS.ordinal] === 0)?.metadata ?? {},
      );
      ctx.check(
        JSON.stringify(decoded.headingPath) === JSON.stringify(heading),
        `heading_path decodes to ${JSON.stringify(decoded.headingPath)}, expected ${JSON.stringify(heading)}`,
      );
      ctx.check(
        typeof decoded.validity.current === 'boolean' && typeof decoded.ordinal === 'number',
        'validity or ordinal decoded with the wrong type',
      );
      for (const written of stored) {
        const hits = await connector.query(written.embedding, 2, {
          view: { kind: 'all' },
          documentId: v.documentId,
        });
        const hit = hits.find(
          (h) => h.metadata[FIELDS.chunkId] === written.metadata[FIELDS.chunkId],
        );
        if (hit === undefined) {
          ctx.check(false, `query with ${written.id}'s own embedding did not return it`);
          continue;
        }
        const problems = diffMetadata(written.metadata, hit.metadata);
        if (hit.text !== written.text) problems.push('text differs');
        mismatches += problems.length;
        ctx.check(problems.length === 0, `query ${written.id}: ${problems.slice(0, 4).join('; ')}`);
      }
    });
    ctx.observe('textBytes', Buffer.byteLength(stored[0]!.text, 'utf8'));
    ctx.observe('mismatches', mismatches);
    ctx.observed(mismatches === 0 ? 'exact round trip' : `${mismatches} mismatch(es)`);
  },
};

export const batchBeyondLimit: ConformanceCase = {
  id: 'batch-beyond-limit',
  title: 'versions larger than maxWriteBatch publish and delete completely',
  guarantee:
    'A version of maxWriteBatch × 2 + 7 chunks is staged in several writes, counted exactly, published whole into the current view, and deleted whole.',
  whenItFails:
    "Declared maxWriteBatch vs. the store's real request limits in _upsert, and pagination in _list / _count / _deleteVersion and their batch forms _listMany / _countMany (the verifier's) (a default page size of 100 or 1000 silently truncates).",
  appliesTo: (c) => c.maxWriteBatch * 2 + 7 <= 20_007,
  declared: (c) => `${c.maxWriteBatch * 2 + 7} chunks in batches of ${c.maxWriteBatch}`,
  timeoutMs: 180_000,
  async run(ctx) {
    const n = ctx.capabilities.maxWriteBatch * 2 + 7;
    const connector = await ctx.connector();
    const publisher = await ctx.publisher();
    const big = ctx.corpus.generated('big', 'v1', n);
    const report = await ctx.time('publish', () => publisher.publish([big]));
    ctx.check(
      report.documents[0]?.outcome === 'published',
      `publication outcome ${report.documents[0]?.outcome}: ${report.documents[0]?.reasons.map(reasonLine).join('; ')}`,
    );
    let count = -1;
    let listed: ListedChunk[] = [];
    let inView: string[] = [];
    await ctx.eventually('published', async () => {
      count = await connector.countChunks(big.documentId, big.versionId);
      listed = await connector.listChunks(big.documentId, big.versionId);
      inView = await listInView(connector, big.documentId, 'epoch');
      ctx.observe('chunks', n);
      ctx.observe('count', count);
      ctx.observe('listed', listed.length);
      ctx.observe('inCurrentView', inView.length);
      ctx.check(count === n, `count ${count}, expected ${n}`);
      ctx.check(
        listed.length === n && new Set(chunkIdsOf(listed)).size === n,
        `listed ${listed.length} chunks, expected ${n} distinct`,
      );
      ctx.check(
        listed.every((r, i) => r.metadata[FIELDS.ordinal] === i),
        'listing is not sorted by ordinal 0..n-1 (gaps or duplicates)',
      );
      ctx.check(inView.length === n, `${inView.length} chunks in the current view, expected ${n}`);
    });
    await ctx.time('delete', () => connector.deleteVersion(big.documentId, big.versionId));
    let left = -1;
    await ctx.eventually('deleted', async () => {
      left = await connector.countChunks(big.documentId, big.versionId);
      ctx.check(left === 0, `${left} chunk(s) left after deleting the version`);
    });
    ctx.observed(
      `count ${count}, listed ${listed.length}, current ${inView.length}, ${left} left after delete`,
    );
  },
};

export const listByDocumentAndVersion: ConformanceCase = {
  id: 'list-by-document-version',
  title: 'listing by document and by version',
  guarantee:
    'listChunks(document) returns every stored chunk of that document (all versions, staged included) and nothing else; listChunks(document, version) exactly that version in ordinal order; countChunks agrees; unknown documents list empty.',
  whenItFails:
    '_list filters (rf_doc and rf_version equality, not prefix matching) and pagination; _count must count the same rows.',
  appliesTo: () => true,
  declared: () => 'exact listings',
  async run(ctx) {
    const connector = await ctx.connector();
    const publisher = await ctx.publisher();
    const v1 = ctx.corpus.generated('lister', 'v1', 3);
    const neighbour = ctx.corpus.generated('lister-2', 'v1', 2);
    await publisher.publish([v1, neighbour]);
    const v2 = ctx.corpus.generated('lister', 'v2', 4);
    const epoch = await connector.readEpoch();
    await connector.upsert(v2.chunks.map((c) => toStoredChunk(c, epoch + 1)));
    await ctx.eventually('listed', async () => {
      const all = await connector.listChunks(v1.documentId);
      const one = await connector.listChunks(v1.documentId, v1.versionId);
      const two = await connector.listChunks(v1.documentId, v2.versionId);
      const none = await connector.listChunks(ctx.corpus.documentId('absent'));
      const counts = [
        await connector.countChunks(v1.documentId, v1.versionId),
        await connector.countChunks(v1.documentId, v2.versionId),
      ];
      ctx.check(
        sameMembers(
          chunkIdsOf(all),
          [...v1.chunks, ...v2.chunks].map((c) => c.chunkId),
        ),
        `listing the document returned ${all.length} chunks, expected ${v1.chunks.length + v2.chunks.length} of its two versions`,
      );
      ctx.check(
        chunkIdsOf(one).join() === v1.chunks.map((c) => c.chunkId).join(),
        `listing version 1 returned ${chunkIdsOf(one).length} chunks or the wrong order`,
      );
      ctx.check(
        chunkIdsOf(two).join() === v2.chunks.map((c) => c.chunkId).join(),
        `listing version 2 returned ${chunkIdsOf(two).length} chunks or the wrong order`,
      );
      ctx.check(none.length === 0, `an unknown document lists ${none.length} chunks`);
      ctx.check(
        counts[0] === 3 && counts[1] === 4,
        `countChunks gives ${counts.join('/')}, expected 3/4`,
      );
      ctx.observe('listed', [all.length, one.length, two.length, none.length]);
      ctx.observed(
        `document ${all.length}, v1 ${one.length}, v2 ${two.length}, unknown ${none.length}`,
      );
    });
  },
};

export const largeDocument: ConformanceCase = {
  id: 'large-document',
  title: 'a 1,000-chunk document is published, verified and replaced',
  guarantee:
    'A 1,000-chunk version publishes and verifies, its replacement by another 1,000-chunk version leaves exactly the new 1,000 chunks in the current view, and the old ones are deleted after grace.',
  whenItFails:
    'Pagination and limits in the hooks core drives for a batch — _listMany, _countMany, _patchValidityMany, _deleteVersions — and their single forms (anything that stops at 100, 256 or 1,000 rows), and request sizes in _upsert.',
  appliesTo: () => true,
  declared: () => '1000 current after replacement',
  timeoutMs: 180_000,
  async run(ctx) {
    const n = 1000;
    const connector = await ctx.connector();
    const publisher = await ctx.publisher({ graceEpochs: 1 });
    const v1 = ctx.corpus.generated('huge', 'v1', n);
    const v2 = ctx.corpus.generated('huge', 'v2', n);
    const first = await ctx.time('publish', () => publisher.publish([v1]));
    ctx.check(
      first.documents[0]?.outcome === 'published',
      `first publication: ${first.documents[0]?.outcome} ${first.documents[0]?.reasons.map(reasonLine).join('; ')}`,
    );
    const second = await ctx.time('replace', () => publisher.publish([v2]));
    ctx.check(
      second.documents[0]?.outcome === 'published',
      `replacement: ${second.documents[0]?.outcome} ${second.documents[0]?.reasons.map(reasonLine).join('; ')}`,
    );
    let inView: string[] = [];
    await ctx.eventually('replaced', async () => {
      inView = await listInView(connector, v2.documentId, 'epoch');
      const flagged = await listInView(connector, v2.documentId, 'flag');
      ctx.check(
        sameMembers(
          inView,
          v2.chunks.map((c) => c.chunkId),
        ),
        `${inView.length} chunks in the current view, expected the ${n} new ones`,
      );
      ctx.check(
        sameMembers(
          flagged,
          v2.chunks.map((c) => c.chunkId),
        ),
        `${flagged.length} chunks flagged current, expected the ${n} new ones`,
      );
    });
    await publisher.publish([ctx.corpus.generated('tick', 'v1', 1)]);
    let old = -1;
    await ctx.eventually('collected', async () => {
      old = await connector.countChunks(v1.documentId, v1.versionId);
      ctx.check(old === 0, `${old} chunks of the replaced 1,000-chunk version left after grace`);
    });
    ctx.observe('currentView', inView.length);
    ctx.observe('oldLeft', old);
    ctx.observed(`${inView.length} current, ${old} old left`);
  },
};
