// Shared test data builders (see @ragfresh/conformance/testing).
export { candidate, DIMS, embed, stored, versionsOf } from '@ragfresh/conformance/testing';
