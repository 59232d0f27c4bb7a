export * from './acquire.js';
export * from './browser.js';
