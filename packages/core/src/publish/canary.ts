import type { Connector, QueryHit } from '../connector.js';
import { FIELDS } from '../metadata.js';
import { type Canary, type CanaryResult, type Reason, reasonLine } from '../model.js';

export type { Canary, CanaryResult } from '../model.js';

const norm = (s: string) => s.normalize('NFC').toLowerCase().replace(/\s+/g, ' ').trim();

function meets(hit: QueryHit, canary: Canary, sourceId: string): boolean {
  const m = hit.metadata;
  if (m[FIELDS.sourceId] !== sourceId) return false;
  const { phrase, url, section } = canary.expect;
  if (phrase !== undefined && !norm(hit.text).includes(norm(phrase))) return false;
  // The page is matched by identity when the canary names its document (the caller resolved
  // the URL under the source's identity policy), so URL spellings do not matter.
  if (url !== undefined) {
    const same =
      canary.documentId !== undefined
        ? m[FIELDS.documentId] === canary.documentId
        : m[FIELDS.url] === url;
    if (!same) return false;
  }
  if (section !== undefined && !norm(String(m[FIELDS.heading] ?? '')).includes(norm(section)))
    return false;
  return true;
}

function describeExpect(c: Canary): string {
  const parts: string[] = [];
  if (c.expect.phrase !== undefined) parts.push(`phrase ${JSON.stringify(c.expect.phrase)}`);
  if (c.expect.url !== undefined) parts.push(`from ${c.expect.url}`);
  if (c.expect.section !== undefined) parts.push(`under ${JSON.stringify(c.expect.section)}`);
  return parts.join(', ') || 'any chunk of its source';
}

export interface CanaryRun {
  readonly connector: Connector;
  readonly embedQuery: (text: string) => Promise<readonly number[]>;
  readonly now: () => Date;
}

/** Why `canary` failed: its expected passage was not in the top `k`. */
export function canaryMiss(canary: Canary): Reason {
  return {
    code: 'canary-failed',
    detail: `"${canary.query}" did not retrieve ${describeExpect(canary)} in the top ${canary.k ?? 5}`,
  };
}

/**
 * Runs one canary against an epoch view. `hidden` lists document versions to leave out (the
 * versions a staged batch replaces: still open in the store until promotion), so a staged run
 * sees exactly the view the batch would publish.
 */
export async function runCanary(
  run: CanaryRun,
  target: {
    readonly canary: Canary;
    readonly sourceId: string;
    readonly phase: CanaryResult['phase'];
    readonly epoch: number;
    readonly hidden?: ReadonlySet<string>;
    /** Chunks of the hidden versions (how many extra hits to ask for). */
    readonly hiddenChunks?: number;
  },
): Promise<CanaryResult> {
  const { canary, sourceId, phase, epoch } = target;
  const k = canary.k ?? 5;
  const hidden = target.hidden ?? new Set<string>();
  const vector = await run.embedQuery(canary.query);
  // Ask for enough extra hits to cover hidden chunks that may rank above the answer.
  const hits = await run.connector.query(vector, Math.min(k + (target.hiddenChunks ?? 0), 1_000), {
    view: { kind: 'epoch', epoch },
  });
  const visible = hits
    .filter(
      (h) => !hidden.has(`${h.metadata[FIELDS.documentId]}\u0000${h.metadata[FIELDS.versionId]}`),
    )
    .slice(0, k);
  const index = visible.findIndex((h) => meets(h, canary, sourceId));
  const at = run.now().toISOString();
  const base = { sourceId, query: canary.query, phase, epoch, at };
  if (index < 0) {
    return {
      ...base,
      ok: false,
      reason: reasonLine(canaryMiss(canary)),
    };
  }
  const hit = visible[index]!;
  return {
    ...base,
    ok: true,
    rank: index + 1,
    documentId: String(hit.metadata[FIELDS.documentId]),
    versionId: String(hit.metadata[FIELDS.versionId]),
  };
}
