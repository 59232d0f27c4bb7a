import { type AcquireDeps, type AcquireRequest, type Acquisition, acquirePage } from './acquire.js';
import type { PageLimits } from './bounds.js';
import { processBounded } from './bounds.js';
import type { PageContext, PageOutcome, PagePipeline } from './extract.js';

/**
 * What observing a page takes: how it is fetched (and rendered), the pipeline it is cut with
 * (a refresh's learner, or the hosts' learned models as stored) and the page limits in front of
 * it. `composeEngine` wires one per role; `composePageObserver` one for a host without a store
 * (the LangChain loader, live refresh).
 */
export interface PageObserver extends AcquireDeps {
  readonly pipeline: PagePipeline;
  readonly pageLimits: PageLimits;
}

/** One page to observe: the acquire request, and the provenance its chunks carry. */
export interface PageObservation extends Omit<AcquireRequest, 'sourceId' | 'pipelineKey'> {
  readonly documentId: string;
  readonly sourceId: string;
  /**
   * Validators are sent only when recorded under this key. Default (absent): the pipeline's;
   * `undefined` given explicitly: sent whatever key they carry.
   */
  readonly pipelineKey?: string | undefined;
  /** The source's provenance beyond what the fetch gives. */
  readonly provenance?: Pick<PageContext, 'authority' | 'canonical'>;
}

/**
 * Acquire (one conditional fetch; a 304 stops everything downstream; render when the source
 * asks), then classify, extract and chunk in one parse behind the page limits: the one page step
 * of refresh, the queue's page workers, the LangChain loader and live refresh, so one page gives
 * one outcome on every path under the same learned models.
 */
export function observePage(
  observer: PageObserver,
  page: PageObservation,
): Promise<Acquisition<PageOutcome>> {
  const { documentId, sourceId, provenance, pipelineKey: _key, ...request } = page;
  const pipelineKey = 'pipelineKey' in page ? page.pipelineKey : observer.pipeline.pipelineKey;
  return acquirePage(
    observer,
    { ...request, sourceId, ...(pipelineKey === undefined ? {} : { pipelineKey }) },
    (input, fetched) =>
      processBounded(
        observer.pipeline,
        input,
        {
          documentId,
          sourceId,
          retrievedAt: fetched.fetchedAt,
          ...(fetched.region === undefined ? {} : { region: fetched.region }),
          ...provenance,
          ...(fetched.lastModifiedAt === undefined
            ? {}
            : { sourceModifiedAt: fetched.lastModifiedAt }),
        },
        observer.pageLimits,
      ),
  );
}
