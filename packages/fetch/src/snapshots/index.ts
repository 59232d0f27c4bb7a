export { FileRawSnapshotStore, PACK_MAX_BYTES } from './disk.js';
export {
  MemoryRawSnapshotStore,
  type RawSnapshot,
  type RawSnapshotEntry,
  type RawSnapshotListOptions,
  type RawSnapshotMeta,
  type RawSnapshotStore,
} from './store.js';
