export {
  type CharsetSource,
  charsetFromContentType,
  type DecodedText,
  decodeBody,
  detectCharset,
  encodingForLabel,
  metaCharset,
  seededRandom,
} from '@ragfresh/core';
export { type BodyReadResult, parseContentEncoding, readBody } from './body.js';
export {
  conditionalHeaders,
  isWeakEtag,
  normalizeEtag,
  usableValidators,
  validatorsFrom,
} from './conditional.js';
export { describeFetchFailure, fetchFailureReason } from './describe.js';
export {
  type DiscoveryCache,
  type DiscoveryCacheEntry,
  discoverLlmsTxt,
  discoverSitemap,
  type LlmsTxtLink,
  parseLlmsTxt,
  type SitemapDiscovery,
  type SitemapDiscoveryOptions,
  type SitemapEntry,
  SitemapParser,
} from './discovery.js';
export {
  DEFAULT_CONTENT_TYPES,
  defaultTwinCandidates,
  Fetcher,
  type FetcherOptions,
  type FetchOptions,
  type MarkdownTwinOptions,
  type ProxyConfig,
  type RetryOptions,
} from './fetcher.js';
export {
  type BackoffPolicy,
  backoffDelay,
  type CircuitBreakerOptions,
  parseRetryAfter,
} from './politeness.js';
export {
  DEFAULT_TURN_TTL_MS,
  type RedisEvalClient,
  RedisPolitenessGate,
  type RedisPolitenessGateOptions,
} from './politeness-redis.js';
export type { HostTurnPolicy, PolitenessGate, SharedHostTurn } from './politeness-shared.js';
export type * from './result.js';
export {
  MemoryRobotsStore,
  ROBOTS_UNREACHABLE,
  type RobotsDecision,
  type RobotsOptions,
  type RobotsStore,
} from './robots.js';
export {
  FileRawSnapshotStore,
  MemoryRawSnapshotStore,
  PACK_MAX_BYTES,
  type RawSnapshot,
  type RawSnapshotEntry,
  type RawSnapshotListOptions,
  type RawSnapshotMeta,
  type RawSnapshotStore,
} from './snapshots/index.js';
export {
  allowEntryProblem,
  classifyAddress,
  type NetworkPolicy,
  parseIp,
  type ResolvedAddress,
  type Resolver,
  SsrfGuard,
} from './ssrf.js';
