// Every engine module, for the engine's own tests: the public surface is src/index.ts (and the
// subpaths in package.json); tests reach the internals here instead of widening it.
export * from '../src/acquire.js';
export * from '../src/boilerplate.js';
export * from '../src/bounds.js';
export * from '../src/chunk.js';
export * from '../src/classify.js';
export * from '../src/compose.js';
export * from '../src/context.js';
export * from '../src/counts.js';
export * from '../src/duplicates.js';
export * from '../src/embed.js';
export * from '../src/engine.js';
export * from '../src/evidence.js';
export * from '../src/extract.js';
export * from '../src/import/index.js';
export * from '../src/inventory.js';
export * from '../src/no-store.js';
export * from '../src/observe.js';
export * from '../src/publish.js';
export * from '../src/reconcile.js';
export * from '../src/reextract.js';
export * from '../src/review.js';
export * from '../src/settings.js';
export * from '../src/snapshot.js';
export * from '../src/types.js';
