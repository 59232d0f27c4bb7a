import type { ConnectorSpec, JournalStep, PublishCandidate, RemovalRequest } from '@ragfresh/core';

/**
 * Where the child dies: right after the journal records `step`, just before/after the epoch
 * advance, or `turns` event-loop turns after the advance started (inside a multi-request
 * claim, between the claim and the pointer write, or after it finished).
 */
export type KillPoint =
  | { readonly kind: 'step'; readonly step: JournalStep }
  | { readonly kind: 'advance'; readonly when: 'before' | 'after' }
  | { readonly kind: 'advance'; readonly when: 'during'; readonly turns: number };

export function describeKillPoint(k: KillPoint): string {
  if (k.kind === 'step') return `journal step "${k.step}"`;
  return k.when === 'during'
    ? `${k.turns} event-loop turn(s) into the epoch advance`
    : `${k.when} the epoch advance`;
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
