/** Re-exported so a fault run's seed means the same sequence as the fetcher's jitter. */
export { seededRandom } from '@ragfresh/core';
export { containerEngineAvailable, type RunningContainer, startContainer } from './container.js';
export {
  type PineconeEmulator,
  type PineconeEmulatorOptions,
  startPineconeEmulator,
} from './pinecone.js';
export {
  CLOUD_STRICT_MODE,
  type QdrantEmulator,
  type QdrantEmulatorOptions,
  type QdrantInjection,
  type StrictMode,
  startQdrantEmulator,
} from './qdrant.js';
export {
  type FaultDecision,
  type FaultHook,
  type FaultRequest,
  Faults,
  type ScriptedFault,
} from './server.js';
