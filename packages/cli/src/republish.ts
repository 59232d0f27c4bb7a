import type { RefreshEngine } from '@ragfresh/engine';
import { EXIT } from './exit.js';

type RepublishReport = Awaited<ReturnType<RefreshEngine['republish']>>;

/**
 * `ragfresh reextract --republish`: what the republish did, one line, then one line per
 * document that still lacks a reserved key. Exit 1 when any does (it stays out of every reader's
 * view until it is republished), else 0.
 */
export function republishCommand(
  r: RepublishReport,
  json: boolean,
  print: (s: string) => void,
): number {
  if (json) print(JSON.stringify(r, null, 2));
  else {
    const moved = r.epoch === undefined ? 'no epoch move' : `one epoch move, to epoch ${r.epoch}`;
    print(
      `republished ${r.republished} of the ${r.lacking} current documents whose chunks lacked rf_access or rf_space (${r.documents - r.lacking} already complete), from raw snapshots, no network; ${moved}; ${r.counts.chunksEmbedded} chunks embedded, ${r.counts.chunksReused} vectors reused.`,
    );
    for (const s of r.skipped) print(`not republished: ${s.url}: ${s.reason}`);
  }
  return r.skipped.length > 0 ? EXIT.failure : EXIT.ok;
}
