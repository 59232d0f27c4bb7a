export type { FailureClass, RetryPolicy } from '@ragfresh/core';
export * from './blue-green.js';
export * from './connector.js';
