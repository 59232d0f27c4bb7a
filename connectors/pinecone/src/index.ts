export type { FailureClass, RetryPolicy } from '@ragfresh/core';
export * from './connector.js';
export * from './lag.js';
