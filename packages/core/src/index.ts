export * from './connector.js';
export * from './errors.js';
export * from './hash.js';
export * from './identity.js';
export * from './metadata.js';
export * from './model.js';
export * from './state/types.js';
export * from './fixture.js';
