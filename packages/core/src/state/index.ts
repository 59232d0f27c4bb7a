export {
  type AggregateIndex,
  type AggregateKeys,
  contributionOf,
  isJudged,
  isUnpublished,
  needsAttention,
  recountAggregates,
  type SourceAggregate,
  type StateAggregates,
  type StateOp,
} from './aggregates.js';
export type { IndexEntry, StateGuard } from './backend.js';
export { redactUrl, type StateBackend } from './backend.js';
export { encodeKeyPart, StateKeys } from './keys.js';
export { KeyvStateStore } from './keyv-store.js';
export {
  DEFAULT_SQLITE_STATE_PATH,
  DEFAULT_STATE_NAMESPACE,
  moveCorruptStateAside,
  type OpenStateStoreOptions,
  openStateStore,
  sqliteStatePath,
} from './open.js';
// Type-only: the Redis and Postgres clients load when openStateStore opens such a store.
export type { PostgresBackendOptions, PostgresStateBackend } from './postgres.js';
export type { RedisBackendOptions, RedisStateBackend } from './redis.js';
export { type SqliteBackendOptions, SqliteStateBackend } from './sqlite.js';
export { KeyvSqlite, type KeyvSqliteOptions } from './sqlite-adapter.js';
