// Shared test data builders (see @ragfresh/conformance/testing).
export { DIMS, expectCode, makeChunks, uniqueName, vector } from '@ragfresh/conformance/testing';
