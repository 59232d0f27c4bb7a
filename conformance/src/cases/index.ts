import type { ConformanceCase } from '../types.js';
import { accessScope } from './access.js';
import { batchCases } from './batch.js';
import { claimCrash, crashCases } from './crash.js';
import {
  batchBeyondLimit,
  largeDocument,
  listByDocumentAndVersion,
  metadataRoundTrip,
} from './data.js';
import { idsDeterministic } from './determinism.js';
import { dropNamespace } from './drop-namespace.js';
import {
  embeddingMigrationNewDimensions,
  embeddingMigrationSameDimensions,
} from './embedding-migration.js';
import { epochRace } from './epoch-race.js';
import { epochSpace } from './epoch-space.js';
import { pausedPublisher, scanPages } from './fencing.js';
import {
  deleteTombstone,
  epochShared,
  retireAfterGrace,
  revertToEarlierVersion,
  shorterReplacement,
} from './lifecycle.js';
import { promotionEpochReaders, promotionFlagReaders } from './promotion.js';
import { langchainReader, metadataTypesAfterPatch } from './readers.js';
import { sentinelEmpty, sentinelIsolated } from './sentinels.js';
import { restageIdempotent, stagedInvisible } from './staging.js';
import { verifyDetectsMissing, verifyWithinLag } from './verify.js';

/** Every case, in the order they run. The sentinels open and close the run. */
export const CASES: readonly ConformanceCase[] = Object.freeze([
  sentinelEmpty,
  idsDeterministic,
  stagedInvisible,
  restageIdempotent,
  verifyDetectsMissing,
  verifyWithinLag,
  promotionEpochReaders,
  promotionFlagReaders,
  shorterReplacement,
  retireAfterGrace,
  deleteTombstone,
  revertToEarlierVersion,
  epochShared,
  epochSpace,
  epochRace,
  pausedPublisher,
  scanPages,
  metadataRoundTrip,
  metadataTypesAfterPatch,
  batchBeyondLimit,
  listByDocumentAndVersion,
  largeDocument,
  accessScope,
  ...batchCases,
  langchainReader,
  embeddingMigrationSameDimensions,
  embeddingMigrationNewDimensions,
  dropNamespace,
  ...crashCases,
  claimCrash,
  sentinelIsolated,
]);
