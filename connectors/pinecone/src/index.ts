export * from './connector.js';
export * from './lag.js';
export type { FailureClass, RetryPolicy } from './retry.js';
