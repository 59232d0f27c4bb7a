import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Connector, StoreFixture, StoreTarget } from '@ragfresh/core';
import {
  CachedEpochSpaceConnector,
  DocumentCountConnector,
  DuplicatingUpsertConnector,
  FirstPageScanConnector,
  FirstPatchOnlyConnector,
  FlagsAsEpochConnector,
  IgnoresFenceConnector,
  KeptEpochDropConnector,
  LaggingIndexConnector,
  LeakyRetireConnector,
  NumericFlagsConnector,
  PostFilterAccessConnector,
  StagedVisibleConnector,
} from './connectors.js';

export {
  BlockingEpochConnector,
  CachedEpochSpaceConnector,
  DocumentCountConnector,
  DuplicatingUpsertConnector,
  FirstPageScanConnector,
  FirstPatchOnlyConnector,
  FlagsAsEpochConnector,
  IgnoresFenceConnector,
  KeptEpochDropConnector,
  LAGGING_INDEX_MS,
  LaggingIndexConnector,
  LeakyRetireConnector,
  NumericFlagsConnector,
  PostFilterAccessConnector,
  StagedVisibleConnector,
} from './connectors.js';

const CONNECTORS = {
  'flags-as-epoch': FlagsAsEpochConnector,
  'staged-visible': StagedVisibleConnector,
  'duplicating-upsert': DuplicatingUpsertConnector,
  'lagging-index': LaggingIndexConnector,
  'leaky-retire': LeakyRetireConnector,
  'first-patch-only': FirstPatchOnlyConnector,
  'document-count': DocumentCountConnector,
  'numeric-flags': NumericFlagsConnector,
  'ignores-fence': IgnoresFenceConnector,
  'first-page-scan': FirstPageScanConnector,
  'post-filter-access': PostFilterAccessConnector,
  'cached-epoch-space': CachedEpochSpaceConnector,
  'kept-epoch-drop': KeptEpochDropConnector,
} as const;

export type BrokenKind = keyof typeof CONNECTORS;

/** A deliberately broken connector, and the case that must catch it. */
export interface BrokenConnector {
  readonly kind: BrokenKind;
  /** The guarantee it declares but does not keep. */
  readonly breaks: string;
  /** Id of the conformance case meant to catch it. */
  readonly caughtBy: string;
  readonly fixture: StoreFixture;
}

/** JSON-options factory for ConnectorSpec (crash cases build broken connectors in a child too). */
export function createBrokenConnector(options: {
  kind: BrokenKind;
  persistPath?: string;
}): Connector {
  const Ctor = CONNECTORS[options.kind];
  return new Ctor(options.persistPath === undefined ? {} : { persistPath: options.persistPath });
}

/** The fixture of one broken kind (also for kinds caught by one case only, not in the list). */
export function brokenFixture(kind: BrokenKind): StoreFixture {
  return {
    store: `broken-${kind}`,
    async start(): Promise<StoreTarget> {
      const dir = mkdtempSync(join(tmpdir(), `ragfresh-broken-${kind}-`));
      const path = (ns: string) => join(dir, `${ns.replace(/[^A-Za-z0-9_-]/g, '_')}.json`);
      return {
        kind: 'embedded',
        description: `deliberately broken memory connector (${kind}), persisted under ${dir}`,
        async createConnector(ns) {
          return createBrokenConnector({ kind, persistPath: path(ns) });
        },
        connectorSpec(ns) {
          return {
            module: new URL('../../dist/broken/index.js', import.meta.url).href,
            exportName: 'createBrokenConnector',
            options: { kind, persistPath: path(ns) },
          };
        },
        async stop() {
          rmSync(dir, { recursive: true, force: true });
        },
      };
    },
  };
}

export const BROKEN_CONNECTORS: readonly BrokenConnector[] = Object.freeze([
  {
    kind: 'flags-as-epoch',
    breaks:
      'declares snapshot promotion, but answers epoch readers from rf_current flags (not atomic)',
    caughtBy: 'promotion-epoch-readers',
    fixture: brokenFixture('flags-as-epoch'),
  },
  {
    kind: 'staged-visible',
    breaks: 'filters the current view on rf_to only, so staged chunks are visible to readers',
    caughtBy: 'staged-invisible',
    fixture: brokenFixture('staged-visible'),
  },
  {
    kind: 'duplicating-upsert',
    breaks: 'inserts instead of upserting: a re-staged version is stored twice',
    caughtBy: 'restage-idempotent',
    fixture: brokenFixture('duplicating-upsert'),
  },
  {
    kind: 'lagging-index',
    breaks:
      'declares immediate visibility, but counts and lists acknowledged writes while the index lags: verify returns ok early',
    caughtBy: 'verify-within-lag',
    fixture: brokenFixture('lagging-index'),
  },
  {
    kind: 'leaky-retire',
    breaks: 'deletes only the first page (4 chunks) of a version: retirement leaves chunks stored',
    caughtBy: 'retire-after-grace',
    fixture: brokenFixture('leaky-retire'),
  },
  {
    kind: 'first-patch-only',
    breaks:
      'the batch validity patch applies only the first patch of each call: a promoted batch leaves replaced versions open',
    caughtBy: 'batch-hooks-agree',
    fixture: brokenFixture('first-patch-only'),
  },
  {
    kind: 'document-count',
    breaks:
      'the batch count counts every version of the document, not the one asked for: verification of a replacement fails',
    caughtBy: 'batch-hooks-agree',
    fixture: brokenFixture('document-count'),
  },
  {
    kind: 'numeric-flags',
    breaks:
      'the validity patch stores rf_current as 1/0 (a bound boolean in a SQLite-family driver): flag readers lose the chunks and the type changed',
    caughtBy: 'metadata-types-after-patch',
    fixture: brokenFixture('numeric-flags'),
  },
  {
    kind: 'ignores-fence',
    breaks:
      'declares store fencing but ignores the fence: a publisher paused past its lease writes after its successor took over',
    caughtBy: 'paused-publisher',
    fixture: brokenFixture('ignores-fence'),
  },
  {
    kind: 'first-page-scan',
    breaks: 'the scan returns its first page as the last: chunks past it are never enumerated',
    caughtBy: 'scan-pages',
    fixture: brokenFixture('first-page-scan'),
  },
  {
    kind: 'cached-epoch-space',
    breaks:
      "keeps the epoch record's space in the connector instance: a second client reads no space from the store",
    caughtBy: 'epoch-space',
    fixture: brokenFixture('cached-epoch-space'),
  },
]);
