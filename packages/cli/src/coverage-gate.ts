import type { RefreshReport } from '@ragfresh/engine';
import { coveragePercent as percent } from '@ragfresh/engine/stages';

/**
 * The line `refresh` prints when its run covered too little (exit 8), or undefined: every
 * source whose pages answered definitively over pages due fell below `minCoverage`, and the
 * whole run when it did (a run of several small sources can miss the gate only overall).
 */
export function coverageShortfall(report: RefreshReport, minCoverage: number): string | undefined {
  if (report.sources.length === 0) return undefined;
  const short = report.sources
    .filter((s) => s.coverage < minCoverage)
    .map((s) => `${s.sourceId} ${percent(s.coverage)} (${s.counts.definitive}/${s.counts.urls})`);
  if (short.length === 0 && report.coverage >= minCoverage) return undefined;
  const overall = `overall ${percent(report.coverage)} (${report.totals.definitive}/${report.totals.urls})`;
  return `ragfresh: coverage below the gate gates.minCoverage ${percent(minCoverage)}: ${[...short, overall].join(', ')} of due pages answered; the others failed or timed out (see the alerts and degraded pages above).`;
}
