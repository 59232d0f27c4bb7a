export * from './blue-green.js';
export * from './connector.js';
export type { FailureClass, RetryPolicy } from './retry.js';
