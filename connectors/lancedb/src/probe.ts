import type { EpochProbe } from '@ragfresh/core';
import {
  epochFromFiles,
  LANCEDB_OPTION_KINDS,
  lanceDbLocation,
  namespacedTable,
  TABLE_NAME,
} from './layout.js';

// `@ragfresh/connector-lancedb/probe`: the published epoch from the files the connector keeps
// (see `epochFromFiles`), without loading @lancedb/lancedb. `ragfresh status` calls it for its
// STORE_LOST check and opens the store only when it answers undefined.

/**
 * The light epoch probe of the LanceDB connector (core's `EpochProbe`): the epoch `readEpoch()`
 * would read, or undefined when the files cannot say for certain, or when the options are ones
 * the factory would refuse (its error is then what the user sees).
 */
export const probeEpoch: EpochProbe = (options, target) => {
  if (Object.keys(options).some((k) => !Object.hasOwn(LANCEDB_OPTION_KINDS, k))) return undefined;
  const { path, table } = options;
  if (path !== undefined && (typeof path !== 'string' || path === '')) return undefined;
  if (table !== undefined && (typeof table !== 'string' || !TABLE_NAME.test(table)))
    return undefined;
  if (target.namespace !== undefined && !/^[a-z0-9_]{1,40}$/.test(target.namespace))
    return undefined;
  const at = lanceDbLocation({ path, table }, target);
  const name =
    target.namespace === undefined ? at.table : namespacedTable(at.table, target.namespace);
  return TABLE_NAME.test(name) ? epochFromFiles(at.path, name) : undefined;
};
