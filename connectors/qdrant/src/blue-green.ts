import { QdrantClient } from '@qdrant/js-client-rest';
import { RagfreshError, type RetryPolicy, withRetry } from '@ragfresh/core';
import {
  classifyQdrantError,
  EPOCH_POINT_ID,
  EPOCH_VALUE_KEY,
  QdrantConnector,
  type QdrantConnectorOptions,
} from './connector.js';

/**
 * Blue/green full rebuilds through a Qdrant collection alias. Readers query the alias; a
 * rebuild writes a fresh physical collection, then one `POST /collections/aliases` request
 * (delete + create, applied atomically by Qdrant) points the alias at it.
 *
 * LangChain caveat: `QdrantVectorStore` calls `getCollections()` before every search and
 * creates the collection when its name is missing from that list; aliases are not listed, so
 * a LangChain reader must be built on the physical collection (`currentAliasTarget`) and
 * rebuilt after each swap. Raw-client readers can use the alias directly.
 */
export interface BlueGreenOptions {
  readonly url: string;
  readonly apiKey?: string;
  /** The alias readers use. */
  readonly alias: string;
  readonly timeoutMs?: number;
  readonly retry?: RetryPolicy;
}

export interface BlueGreenRebuild {
  /** Physical collection being built. */
  readonly collection: string;
  /** Collection the alias points at now, if any. */
  readonly previous: string | undefined;
  /** Connector on the new collection; open it, publish everything, then `swapQdrantAlias`. */
  readonly connector: QdrantConnector;
}

function clientOf(o: BlueGreenOptions): QdrantClient {
  return new QdrantClient({
    url: o.url,
    ...(o.apiKey === undefined ? {} : { apiKey: o.apiKey }),
    timeout: o.timeoutMs ?? 30_000,
    checkCompatibility: false,
  });
}

/** The collection `alias` points at, or undefined when the alias does not exist. */
export async function currentAliasTarget(o: BlueGreenOptions): Promise<string | undefined> {
  const client = clientOf(o);
  const r = await withRetry('qdrant', 'list aliases', o.retry ?? {}, classifyQdrantError, () =>
    client.getAliases(),
  );
  return r.aliases.find((a) => a.alias_name === o.alias)?.collection_name;
}

/**
 * Starts a rebuild: a new collection `<alias>--<stamp>` whose epoch pointer starts at the
 * epoch of the collection the alias serves now, so epoch readers racing the swap stay inside
 * one snapshot.
 */
export async function startBlueGreenRebuild(
  o: BlueGreenOptions,
  connector: Omit<QdrantConnectorOptions, 'url' | 'collection' | 'apiKey'> = {},
): Promise<BlueGreenRebuild> {
  const previous = await currentAliasTarget(o);
  let initialEpoch = 0;
  if (previous !== undefined) {
    const client = clientOf(o);
    const [p] = await withRetry('qdrant', 'read epoch', o.retry ?? {}, classifyQdrantError, () =>
      client.retrieve(previous, { ids: [EPOCH_POINT_ID], with_payload: true }),
    );
    const e = p?.payload?.[EPOCH_VALUE_KEY];
    if (typeof e === 'number') initialEpoch = e;
  }
  const collection = `${o.alias}--${Date.now().toString(36)}`;
  return {
    collection,
    previous,
    connector: new QdrantConnector({
      ...connector,
      url: o.url,
      collection,
      initialEpoch,
      ...(o.apiKey === undefined ? {} : { apiKey: o.apiKey }),
    }),
  };
}

/**
 * Points `alias` at `collection` in one atomic alias request. With `dropPrevious`, deletes the
 * collection it pointed at before (after the swap, so readers never see a missing alias).
 */
export async function swapQdrantAlias(
  o: BlueGreenOptions & { readonly collection: string; readonly dropPrevious?: boolean },
): Promise<{ previous: string | undefined }> {
  const client = clientOf(o);
  const previous = await currentAliasTarget(o);
  if (previous === o.collection) return { previous };
  const actions = [
    ...(previous === undefined ? [] : [{ delete_alias: { alias_name: o.alias } }]),
    { create_alias: { collection_name: o.collection, alias_name: o.alias } },
  ];
  try {
    await withRetry('qdrant', 'swap alias', o.retry ?? {}, classifyQdrantError, () =>
      client.updateCollectionAliases({ actions }),
    );
  } catch (err) {
    // A retried swap whose first attempt was applied fails on delete/create; check the result.
    if ((await currentAliasTarget(o)) !== o.collection) {
      if (err instanceof RagfreshError) throw err;
      throw new RagfreshError(
        'STORE_REJECTED',
        `alias swap of ${o.alias} to ${o.collection} was refused.`,
        { scope: 'qdrant', cause: err },
      );
    }
  }
  if (o.dropPrevious === true && previous !== undefined) {
    await withRetry('qdrant', 'drop previous collection', o.retry ?? {}, classifyQdrantError, () =>
      client.deleteCollection(previous),
    );
  }
  return { previous };
}
