import type { ConnectorSpec, JournalStep, PublishCandidate, RemovalRequest } from '@ragfresh/core';

/** Where the child dies: right after the journal records `step`, or just before/after the epoch advance. */
export type KillPoint =
  | { readonly kind: 'step'; readonly step: JournalStep }
  | { readonly kind: 'advance'; readonly when: 'before' | 'after' };

export function describeKillPoint(k: KillPoint): string {
  return k.kind === 'step' ? `journal step "${k.step}"` : `${k.when} the epoch advance`;
}

/** What the parent hands the crash child (as a JSON file). */
export interface CrashJob {
  readonly spec: ConnectorSpec;
  readonly dimensions: number;
  readonly statePath: string;
  readonly holder: string;
  readonly killAt: KillPoint;
  readonly graceEpochs: number;
  readonly candidates: readonly PublishCandidate[];
  readonly removals: readonly RemovalRequest[];
}
