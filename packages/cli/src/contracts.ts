import type { StateStore } from '@ragfresh/core';
import type { ResolvedConfig } from './config.js';
import { EXIT } from './exit.js';
import { table } from './status.js';

/** Publish-contract thresholds measured on a source's own history (state only, no store). */
export interface ContractSuggestion {
  readonly sourceId: string;
  /** Healthy current documents the numbers come from. */
  readonly documents: number;
  readonly smallestChars?: number;
  readonly medianChars?: number;
  /** Half the smallest good page: a page shorter than any good one by half is suspicious. */
  readonly minChars?: number;
  /** The contract the config sets, for comparison. */
  readonly configured?: ResolvedConfig['sources'][number]['contract'];
}

export async function suggestContracts(
  config: ResolvedConfig,
  state: StateStore,
): Promise<ContractSuggestion[]> {
  const out: ContractSuggestion[] = [];
  for (const source of config.sources) {
    const sizes: number[] = [];
    for await (const r of state.listDocuments({ sourceId: source.id }))
      if (r.status === 'healthy' && r.currentVersionId !== undefined && r.textChars !== undefined)
        sizes.push(r.textChars);
    sizes.sort((a, b) => a - b);
    const smallest = sizes[0];
    out.push({
      sourceId: source.id,
      documents: sizes.length,
      ...(smallest === undefined
        ? {}
        : {
            smallestChars: smallest,
            medianChars: sizes[Math.floor(sizes.length / 2)]!,
            minChars: Math.floor(smallest / 2),
          }),
      ...(source.contract === undefined ? {} : { configured: source.contract }),
    });
  }
  return out;
}

/** `ragfresh contracts`: thresholds from each source's history, next to what the config says. */
export async function contractsCommand(
  config: ResolvedConfig,
  state: StateStore,
  opts: { readonly json: boolean },
  print: (s: string) => void,
): Promise<number> {
  const rows = await suggestContracts(config, state);
  if (opts.json) {
    print(JSON.stringify(rows, null, 2));
    return EXIT.ok;
  }
  print(
    table(
      ['source', 'good docs', 'smallest', 'median', 'suggested minChars', 'configured'],
      rows.map((r) => [
        r.sourceId,
        String(r.documents),
        r.smallestChars === undefined ? '-' : String(r.smallestChars),
        r.medianChars === undefined ? '-' : String(r.medianChars),
        r.minChars === undefined ? '- (refresh first)' : String(r.minChars),
        r.configured === undefined ? 'none' : JSON.stringify(r.configured),
      ]),
    ),
  );
  print(
    '\nminChars is half the smallest healthy page of the source. maxShrink has no measured basis until a\nsource has shrunk legitimately: keep it unset, or set it from a shrink you approved in review.',
  );
  return EXIT.ok;
}
