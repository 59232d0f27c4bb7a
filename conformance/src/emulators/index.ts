export { containerEngineAvailable, type RunningContainer, startContainer } from './container.js';
export {
  type PineconeEmulator,
  type PineconeEmulatorOptions,
  startPineconeEmulator,
} from './pinecone.js';
export { type QdrantEmulator, type QdrantEmulatorOptions, startQdrantEmulator } from './qdrant.js';
export { type FaultDecision, Faults, seededRandom } from './server.js';
