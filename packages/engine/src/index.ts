// The engine's root: what every host needs to build and run an engine, and no more. Each name
// below is documented; `test/root-exports.test.ts` pins the list, so growth is a visible decision.
// The rest is on documented subpaths:
//   `@ragfresh/engine/pipeline`   the page-pipeline port, its default and limits, snapshot re-extraction
//   `@ragfresh/engine/stages`     stage functions for hosts that run stages themselves (queue, LangChain)
//   `@ragfresh/engine/settings`   every setting type and default, resolvable without the engine
//   `@ragfresh/engine/governance` removal, undo, garbage collection, as-of epochs
//   `@ragfresh/engine/migrate`    the embedding-space migration
//   `@ragfresh/engine/import`     the export importer

export {
  /** What `composeEngine` returns: the engine, connector, state, publisher, pipeline, `close`. */
  type ComposedEngine,
  /** The composition root: every role is wired here, from one `EngineSettings`. */
  composeEngine,
  /** What a host hands `composeEngine` beside the settings: connector, state, embeddings, logger. */
  type EnginePorts,
  /** The role an engine is composed for (refresh, page-worker, publisher, serve, ui, ...). */
  type EngineRole,
} from './compose.js';
export type {
  /** One page's event in a run (`published`, `quarantined`, ...) with typed reasons. */
  DocumentEvent,
  /** Counts of one refresh, per source and in total. */
  RefreshCounts,
  /** What `RefreshEngine.refresh` returns: per-source reports, totals, coverage, store check. */
  RefreshReport,
  /** One source's share of a refresh: counts, alerts, events, coverage. */
  SourceReport,
} from './counts.js';
export {
  /** One URL a collapsed result is found at (title, heading, document). */
  type Citation,
  /** A result standing for every hit of one duplicate group, with every citation. */
  type CollapsedHit,
  /** Collapses the hits of one duplicate group into one result that cites every copy. */
  collapseDuplicateHits,
} from './duplicates.js';
export {
  /** The refresh engine: `refresh`, `verify`, `recover`, `approve` / `reject`, `reextract`. */
  RefreshEngine,
  /** Which sources `refresh` runs (`all`, `sourceIds`) and its abort signal. */
  type RefreshOptions,
} from './engine.js';
export type {
  /** What `RefreshEngine.recover` rebuilt from the store, and what it could not. */
  RecoverReport,
  /** What `RefreshEngine.verify` found comparing state and store, and what it repaired. */
  VerifyReport,
} from './reconcile.js';
export {
  /** Settings as resolved once, with their defaults (every role reads these). */
  type EngineSettings,
  /** Settings as a host writes them (every field optional). */
  type EngineSettingsInput,
  /** Resolves `EngineSettingsInput` into `EngineSettings`, defaults filled in. */
  resolveEngineSettings,
} from './settings.js';
export {
  /** How a source's pages are read: `raw`, `rendered`, or `auto` (render an empty app shell). */
  type AcquisitionSetting,
  /** A source's classify settings (`ignore`: verdict codes that do not block a page). */
  type ClassifySettings,
  /** The deletion policy used when a host gives none (nothing auto-approved). */
  DEFAULT_DELETION_POLICY,
  /** How much gone evidence a deletion proposal needs, and whether one is auto-approved. */
  type DeletionPolicy,
  /** The logger port: `info`, `warn`, progress and the optional heartbeat. */
  type EngineLogger,
  /** The metrics port: counters and gauges with labels. */
  type EngineMetrics,
  /** A source as the engine reads it: URLs, sitemaps, contract, schedule, acquisition. */
  type EngineSource,
  /** The page pool's pulse while pages are in flight (`EngineLogger.heartbeat`). */
  type Heartbeat,
  /** The headless-rendering port (`@ragfresh/render` implements it). */
  type PageRenderer,
  /** A logger that says nothing. */
  silentLogger,
  /** Where approved tombstones are mirrored outside the state store (read back by `recover`). */
  type TombstoneMirror,
} from './types.js';
