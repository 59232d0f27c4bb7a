import { type Connector, RagfreshError, type StateStore } from '@ragfresh/core';

/*
 * The state records the epoch each document's current version (or its removal) became
 * visible at; the store keeps the published epoch. A store behind the state was deleted, reset
 * or replaced: `status` and `query` say so (STORE_LOST, exit 1) instead of "healthy" or
 * "no results". The check costs one epoch read; the state side comes from records the command
 * reads anyway.
 */

/** The STORE_LOST error of a store at `storeEpoch` whose state recorded `stateEpoch`. */
export function storeLostError(
  store: string,
  storeEpoch: number,
  stateEpoch: number,
): RagfreshError {
  return new RagfreshError(
    'STORE_LOST',
    `the ${store} store is at epoch ${storeEpoch}, behind the state's ${stateEpoch}: it was deleted, reset or replaced, and readers get nothing or an old copy. Run \`ragfresh refresh --all\` (or \`ragfresh verify --repair\`) to republish from the raw snapshots.`,
    { scope: store, details: { storeEpoch, stateEpoch } },
  );
}

/** The epoch one document recorded: the store's published epoch must have reached it. */
export function recordedEpoch(record: { readonly publishedEpoch?: number }): number {
  return record.publishedEpoch ?? 0;
}

/** STORE_LOST when the store's epoch is behind `stateEpoch`, else undefined. One epoch read. */
export async function storeBehind(
  connector: Connector,
  stateEpoch: number,
): Promise<RagfreshError | undefined> {
  if (stateEpoch === 0) return undefined;
  return epochBehind(connector.store, await connector.readEpoch(), stateEpoch);
}

/** STORE_LOST when `storeEpoch` (however it was read) is behind `stateEpoch`, else undefined. */
export function epochBehind(
  store: string,
  storeEpoch: number,
  stateEpoch: number,
): RagfreshError | undefined {
  return storeEpoch < stateEpoch ? storeLostError(store, storeEpoch, stateEpoch) : undefined;
}

/** Highest epoch recorded on any document of the state (0 when nothing was published). */
export async function highestRecordedEpoch(state: StateStore): Promise<number> {
  let highest = 0;
  for await (const r of state.listDocuments()) highest = Math.max(highest, recordedEpoch(r));
  return highest;
}
