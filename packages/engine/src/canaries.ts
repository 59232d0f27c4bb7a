import type { CanaryResult, Publisher } from '@ragfresh/core';

/**
 * Collects the canary results of every batch a refresh publishes, so each source's run summary
 * records them (durably, with the epoch) and `status` can show the latest. The publisher is
 * observed rather than changed: its report already carries the results.
 */
export class CanaryLog {
  #results: CanaryResult[] = [];

  /** A publisher whose `publish` records the report's canaries here; everything else is the same object's. */
  observe(publisher: Publisher): Publisher {
    const log = this;
    return new Proxy(publisher, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target) as unknown;
        if (prop !== 'publish' || typeof value !== 'function') {
          return typeof value === 'function' ? value.bind(target) : value;
        }
        return async (...args: Parameters<Publisher['publish']>) => {
          const report = await target.publish(...args);
          if (report.canaries !== undefined) log.#results.push(...report.canaries);
          return report;
        };
      },
    });
  }

  /** Forgets results of earlier refreshes. */
  reset(): void {
    this.#results = [];
  }

  /** The results of one source since the last reset, in the order they ran. */
  of(sourceId: string): CanaryResult[] {
    return this.#results.filter((r) => r.sourceId === sourceId);
  }
}
