export {
  connectRedis,
  FINISH_QUEUE,
  hasHashTag,
  isConnectionError,
  PAGES_QUEUE,
  PUBLISH_QUEUE,
  prefixOf,
  QUEUE_PREFIX_PATTERN,
  type QueueConfig,
  type QueueRedis,
  queueConfigProblem,
} from './config.js';
export { type FinishResult, finishWindow } from './finish.js';
export { PageWorker, type PageWorkerOptions } from './page-worker.js';
export {
  type FinishJob,
  finishJobId,
  type PageBatchJob,
  type PageBatchResult,
  type PageProposal,
  type PublishJob,
  type PublishJobResult,
  pageJobId,
  publishJobId,
  runKeyOf,
} from './payloads.js';
export { PublishConsumer, type PublishConsumerOptions } from './publish-consumer.js';
export { assertQueueRedis } from './redis-policy.js';
export { type ScheduleOptions, type ScheduleReport, scheduleDueSources } from './scheduler.js';
export { obliterateQueues, type QueueDepth, type QueueStatus, queueStatus } from './status.js';
