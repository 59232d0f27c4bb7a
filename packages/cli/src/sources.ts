import type { ResolvedConfig, ResolvedSource } from './config.js';
import { formatDuration } from './duration.js';
import { EXIT } from './exit.js';
import { table } from './status.js';

/** One source's entry in the register (`ragfresh sources`, the dashboard), with what it lacks. */
export interface RegisterEntry {
  readonly sourceId: string;
  readonly owner?: string;
  readonly permission?: ResolvedSource['permission'];
  readonly licence?: string;
  readonly intendedUse?: string;
  readonly authority?: string;
  /** Groups that may read it; empty: public. */
  readonly access: readonly string[];
  readonly retentionMs?: number;
  readonly everyMs: number;
  readonly freshnessObjectiveMs: number;
  /** `no owner`, `no permission basis`: a source nobody answers for, or indexed on no stated grounds. */
  readonly gaps: readonly string[];
}

/** The register of the config's sources, in config order. */
export function sourceRegister(config: Pick<ResolvedConfig, 'sources'>): RegisterEntry[] {
  return config.sources.map((s) => {
    const gaps: string[] = [];
    if (s.owner === undefined || s.owner.trim() === '') gaps.push('no owner');
    if (s.permission === undefined) gaps.push('no permission basis');
    return {
      sourceId: s.id,
      ...(s.owner === undefined ? {} : { owner: s.owner }),
      ...(s.permission === undefined ? {} : { permission: s.permission }),
      ...(s.licence === undefined ? {} : { licence: s.licence }),
      ...(s.intendedUse === undefined ? {} : { intendedUse: s.intendedUse }),
      ...(s.authority === undefined ? {} : { authority: s.authority }),
      access: s.access,
      ...(s.retentionMs === undefined ? {} : { retentionMs: s.retentionMs }),
      everyMs: s.everyMs,
      freshnessObjectiveMs: s.freshnessObjectiveMs,
      gaps,
    };
  });
}

/** How a register entry's scope and retention read in a table. */
export function describeAccess(access: readonly string[]): string {
  return access.length === 0 ? 'public' : access.join(', ');
}

export function describeRetention(ms: number | undefined): string {
  return ms === undefined ? 'forever' : formatDuration(ms);
}

/**
 * `ragfresh sources`: the register, one row per source, from the config alone (no state, no
 * store). Exit 1 when a source has no owner or no permission basis, so CI can gate on it.
 */
export function sourcesCommand(
  config: Pick<ResolvedConfig, 'sources'>,
  opts: { readonly json: boolean },
  print: (s: string) => void,
): number {
  const rows = sourceRegister(config);
  const flagged = rows.filter((r) => r.gaps.length > 0);
  if (opts.json) print(JSON.stringify(rows, null, 2));
  else {
    print(
      table(
        ['source', 'owner', 'permission', 'licence', 'use', 'access', 'retention', 'every', ''],
        rows.map((r) => [
          r.sourceId,
          r.owner ?? '-',
          r.permission === undefined
            ? '-'
            : `${r.permission.basis}${r.permission.note === undefined ? '' : ` (${r.permission.note})`}`,
          r.licence ?? '-',
          r.intendedUse ?? '-',
          describeAccess(r.access),
          describeRetention(r.retentionMs),
          formatDuration(r.everyMs),
          r.gaps.length === 0 ? '' : `! ${r.gaps.join(', ')}`,
        ]),
      ),
    );
    if (flagged.length > 0)
      print(
        `\n${flagged.length} of ${rows.length} source(s) lack an owner or a permission basis: set sources[].owner and sources[].permission.basis (see docs/governance.md).`,
      );
  }
  return flagged.length > 0 ? EXIT.failure : EXIT.ok;
}
