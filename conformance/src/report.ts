import type { ConnectorCapabilities, StoreTarget } from '@ragfresh/core';
import type { CaseReport, ConformanceReport } from './types.js';

export function describeCapabilities(c: ConnectorCapabilities): string {
  const visibility =
    c.visibility.mode === 'immediate' ? 'immediate' : `eventual(maxLagMs=${c.visibility.maxLagMs})`;
  return [
    `promotion=${c.promotion}`,
    `flagPromotion=${c.flagPromotion}`,
    `visibility=${visibility}`,
    `maxWriteBatch=${c.maxWriteBatch}`,
    ...(c.maxMetadataBytes === undefined ? [] : [`maxMetadataBytes=${c.maxMetadataBytes}`]),
    `epochInStore=${c.epochInStore}`,
    `idForm=${c.idForm}`,
  ].join(' ');
}

export function formatHeader(info: {
  readonly target: Pick<StoreTarget, 'kind' | 'description'>;
  readonly capabilities: ConnectorCapabilities;
  readonly suiteVersion: string;
  readonly connector?: ConformanceReport['connector'];
}): string {
  return [
    `store:        ${info.capabilities.store}`,
    ...(info.connector === undefined
      ? []
      : [`package:      ${info.connector.package} ${info.connector.version}`]),
    `target:       ${info.target.kind} — ${info.target.description}`,
    `suite:        @ragfresh/conformance ${info.suiteVersion}`,
    `capabilities: ${describeCapabilities(info.capabilities)}`,
  ].join('\n');
}

const clip = (s: string, n: number): string => (s.length <= n ? s : `${s.slice(0, n - 1)}…`);

const COLUMNS = [
  { title: 'case', width: 26 },
  { title: 'result', width: 6 },
  { title: 'declared', width: 40 },
  { title: 'observed', width: 60 },
  { title: 'ms', width: 7 },
] as const;

function row(cells: readonly string[]): string {
  return cells
    .map((cell, i) => {
      const w = COLUMNS[i]!.width;
      return i === cells.length - 1 ? cell.padStart(w) : clip(cell, w).padEnd(w);
    })
    .join('  ');
}

export function formatTableHead(): string {
  const head = row(COLUMNS.map((c) => c.title));
  return `${head}\n${'-'.repeat(head.length)}`;
}

export function formatCaseRow(r: CaseReport): string {
  const result = r.status === 'passed' ? 'pass' : r.status === 'failed' ? 'FAIL' : 'skip';
  const lines = [row([r.id, result, r.declared, r.observed, String(r.durationMs)])];
  if (r.status === 'failed') {
    for (const f of r.failures.slice(0, 5)) lines.push(`    - ${f}`);
    if (r.failures.length > 5) lines.push(`    - … ${r.failures.length - 5} more`);
    lines.push(`    check: ${r.whenItFails}`);
  }
  return lines.join('\n');
}

export function formatSummary(report: ConformanceReport): string {
  const { passed, failed, skipped } = report.counts;
  return `${report.passed ? 'PASS' : 'FAIL'}: ${passed} passed, ${failed} failed, ${skipped} skipped in ${(report.durationMs / 1000).toFixed(1)} s`;
}

/** The whole report as the CLI prints it. */
export function formatReport(report: ConformanceReport): string {
  return [
    formatHeader({
      target: report.target,
      capabilities: report.capabilities,
      suiteVersion: report.suite.version,
      ...(report.connector === undefined ? {} : { connector: report.connector }),
    }),
    '',
    formatTableHead(),
    ...report.cases.map(formatCaseRow),
    '',
    formatSummary(report),
  ].join('\n');
}
