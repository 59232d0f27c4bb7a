import { decodeChunkMetadata, RagfreshError } from '@ragfresh/core';
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
 * Access groups are refused until the query path enforces them in the store filter (issue 35):
 * a server that took `--access` and answered unscoped would show a group's readers what it must
 * not. ACCESS HOOK: once `queryCurrentView` takes the reader's groups, drop this check and pass
 * `identity.access` in `search` below (the one call into the query path).
 */
function checkIdentity(identity: ReaderIdentity): void {
  if ((identity.access ?? []).length > 0)
    throw new RagfreshError(
      'INVALID_CONFIG',
      'access groups (--access) need access scopes in the query path, which this build does not enforce yet; start the reader without them.',
      { scope: 'mcp' },
    );
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
  checkIdentity(identity);
  return {
    sourceIds: rt.config.sources.map((s) => s.id),
    identity,
    async search({ query, k, source }): Promise<ReadonlyDeep<SearchOutput>> {
      // ACCESS HOOK (issue 35): the reader's `identity.access` goes into this scope.
      const { hits, storeEpoch } = await searchCurrentView(
        rt,
        query,
        k,
        source === undefined ? {} : { sourceId: source },
      );
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
      const found = await knownDocuments(rt, url, source);
      if (found.length === 0)
        throw new RagfreshError('NOT_FOUND', `${unknownDocument(url)} The explain tool says why.`, {
          scope: 'mcp',
        });
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
          : await rt.connector.listChunks(record.documentId, record.currentVersionId);
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
          .filter((s) => source === undefined || s.sourceId === source)
          .map((s) => ({ ...s, reviewPending: s.review })),
      };
    },

    async explain({ url, source }) {
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
  checkIdentity(options.identity ?? {});
  const rt = await openRuntime(config, {
    role: 'read',
    ...(options.log === undefined ? {} : { log: options.log }),
  });
  return { ...readerOver(rt, options.identity), close: () => rt.close() };
}
