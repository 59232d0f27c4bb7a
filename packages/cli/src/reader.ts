import {
  accessAdmits,
  decodeChunkMetadata,
  FIELDS,
  normalizeAccess,
  RagfreshError,
} from '@ragfresh/core';
import type {
  FreshnessOutput,
  GetDocumentOutput,
  RagfreshReader,
  ReaderIdentity,
  ReadonlyDeep,
  SearchOutput,
} from '@ragfresh/mcp';
import { RECENT_HISTORY } from '@ragfresh/mcp';
import { knownDocuments, searchCurrentView, unknownDocument } from './commands.js';
import type { ResolvedConfig } from './config.js';
import { explainUrl } from './explain.js';
import type { Logger } from './log.js';
import { openRuntime, type Runtime } from './runtime.js';
import { sourceStatuses, stateEpochOf } from './status.js';
import { storeBehind, storeLostError } from './store-health.js';

/** A reader over an opened project; `close()` closes what `openReader` opened. */
export interface OpenedReader extends RagfreshReader {
  close(): Promise<void>;
}

/**
 * The server's access groups, checked once (a bad name is INVALID_ARGUMENT at start). Every
 * search passes them to the store's filter: public chunks plus these groups', never chosen by a
 * tool call (the tools' input schemas have no such argument).
 */
function readerGroups(identity: ReaderIdentity): string[] {
  return normalizeAccess(identity.access, '--access');
}

async function throwIfStoreBehind(rt: Runtime, stateEpoch: number): Promise<void> {
  const lost = await storeBehind(rt.connector, stateEpoch);
  if (lost !== undefined) throw lost;
}

/**
 * The MCP tools' reader over a runtime: the same paths `ragfresh query`, `inspect` and `status`
 * take (`searchCurrentView`, `knownDocuments`, `sourceStatuses`), each checking the store
 * against the records it read (STORE_LOST). It reads only; the runtime should be opened with
 * role `read`, so it never takes the publish lease.
 */
export function readerOver(rt: Runtime, identity: ReaderIdentity = {}): RagfreshReader {
  const access = readerGroups(identity);
  // A scoped source is invisible to a reader outside its groups: not searched (the store's
  // filter), not listed, not explained, its documents unknown.
  const readable = new Set(
    rt.config.sources
      .filter((s) => s.access.length === 0 || s.access.some((g) => access.includes(g)))
      .map((s) => s.id),
  );
  const unknown = (url: string) =>
    new RagfreshError('NOT_FOUND', `${unknownDocument(url)} The explain tool says why.`, {
      scope: 'mcp',
    });
  return {
    sourceIds: [...readable],
    identity,
    async search({ query, k, source }): Promise<ReadonlyDeep<SearchOutput>> {
      const { hits, storeEpoch } = await searchCurrentView(rt, query, k, {
        access,
        ...(source === undefined ? {} : { sourceId: source }),
      });
      return {
        query,
        storeEpoch,
        results: hits.map((h) => ({
          rank: h.rank,
          score: h.score,
          url: h.provenance.source,
          ...(h.provenance.title ? { title: h.provenance.title } : {}),
          retrievedAt: h.provenance.fetched,
          ...(h.provenance.section === undefined ? {} : { section: h.provenance.section }),
          documentId: h.documentId,
          versionId: h.versionId,
          label: h.stale ? 'stale' : 'current',
          ...(h.provenance.status === undefined ? {} : { status: h.provenance.status }),
          ...(h.provenance.staleSince === undefined ? {} : { staleSince: h.provenance.staleSince }),
          alsoAt: h.citations
            .slice(1)
            .map((c) => ({ url: c.url, title: c.title, section: c.heading })),
          trust: 'untrusted-page-text',
          text: h.text,
        })),
      };
    },

    async getDocument({ url, source, maxChunks }): Promise<ReadonlyDeep<GetDocumentOutput>> {
      const found = (await knownDocuments(rt, url, source)).filter((f) =>
        readable.has(f.record.sourceId),
      );
      if (found.length === 0) throw unknown(url);
      if (found.length > 1)
        throw new RagfreshError(
          'INVALID_ARGUMENT',
          `${url} is a document of several sources (${found.map((f) => f.record.sourceId).join(', ')}); pass source.`,
          { scope: 'mcp' },
        );
      const { record } = found[0]!;
      await throwIfStoreBehind(rt, record.publishedEpoch ?? 0);
      const chunks =
        record.currentVersionId === undefined
          ? []
          : (await rt.connector.listChunks(record.documentId, record.currentVersionId)).filter(
              (c) => accessAdmits(c.metadata[FIELDS.access], access),
            );
      return {
        ...record,
        chunkCount: chunks.length,
        chunks: chunks.slice(0, maxChunks).map((c) => {
          const d = decodeChunkMetadata(c.metadata);
          return {
            ordinal: d.ordinal,
            ...(d.headingPath.length === 0 ? {} : { section: d.headingPath.join(' > ') }),
            trust: 'untrusted-page-text' as const,
            text: c.text,
          };
        }),
        history: [...(record.history ?? [])].slice(-RECENT_HISTORY),
      };
    },

    async freshness({ source }): Promise<ReadonlyDeep<FreshnessOutput>> {
      const statuses = await sourceStatuses(rt.config, rt.state);
      // `ragfresh status`'s store check: the store's epoch against every record's.
      const storeEpoch = await rt.connector.readEpoch();
      const stateEpoch = stateEpochOf(statuses);
      if (storeEpoch < stateEpoch) throw storeLostError(rt.connector.store, storeEpoch, stateEpoch);
      return {
        storeEpoch,
        sources: statuses
          .filter((s) => readable.has(s.sourceId))
          .filter((s) => source === undefined || s.sourceId === source)
          .map((s) => ({ ...s, reviewPending: s.review })),
      };
    },

    async explain({ url, source }) {
      const held = await knownDocuments(rt, url, source);
      if (held.length > 0 && !held.some((f) => readable.has(f.record.sourceId))) throw unknown(url);
      const { explanation, stateEpoch } = await explainUrl(rt, url, source);
      await throwIfStoreBehind(rt, stateEpoch);
      return explanation;
    },
  };
}

/**
 * Opens a project for reading (role `read`: no publish lease, no fetching) and returns the tools'
 * reader over it: what `ragfresh mcp` serves and what `ragfreshTools()` (`@ragfresh/mcp/ai`)
 * takes. The identity (access groups) is the server's, fixed here.
 */
export async function openReader(
  config: ResolvedConfig,
  options: { readonly identity?: ReaderIdentity; readonly log?: Logger } = {},
): Promise<OpenedReader> {
  readerGroups(options.identity ?? {});
  const rt = await openRuntime(config, {
    role: 'read',
    ...(options.log === undefined ? {} : { log: options.log }),
  });
  return { ...readerOver(rt, options.identity), close: () => rt.close() };
}
