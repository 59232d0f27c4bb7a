export * from './checkpoint.js';
export * from './formats.js';
export * from './import.js';
export * from './reconcile.js';
export * from './records.js';
export * from './row.js';
export * from './rules.js';
export * from './version.js';
