/**
 * The page stage and the bounded pool, for callers that run pages outside `RefreshEngine`
 * (the `@ragfresh/queue` workers): the same pipeline, not a fork of it.
 */
export { Mutex, mapLimit } from './concurrency.js';
export { InFlightPages } from './heartbeat.js';
export { type PageTask, refreshPage } from './page.js';
/** A source run's shape checks, for the queue's end-of-window job (as `RefreshEngine` runs them). */
export { checkShape } from './shape.js';
