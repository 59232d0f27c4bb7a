export * from './browser.js';
