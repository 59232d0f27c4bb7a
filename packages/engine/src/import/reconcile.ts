import { type DocumentRecord, sha256Hex } from '@ragfresh/core';
import type { EngineContext } from '../context.js';
import { proposeDeletion } from '../review.js';
import type { EngineSource } from '../types.js';
import type { ExportCoverage } from './row.js';
import { identityOf } from './rules.js';

export interface InventoryReconcileOptions {
  readonly source: EngineSource;
  /** Every URL the inventory lists. */
  readonly urls: readonly string[];
  /** Only an inventory with complete coverage may nominate anything. */
  readonly coverage: ExportCoverage;
  /** Where the inventory came from, quoted in the evidence. */
  readonly label: string;
}

export interface InventoryReconcileReport {
  readonly sourceId: string;
  readonly listed: number;
  /** Live documents of the source the inventory does not list. */
  readonly missing: readonly { readonly documentId: string; readonly url: string }[];
  /** Review items created now (a pending nomination is not created twice). */
  readonly nominated: number;
  /** Why nothing was nominated, when the inventory's coverage is not complete. */
  readonly refused?: readonly string[];
}

/**
 * Nominates the live documents an inventory does not list into the review queue, with that
 * evidence. Nothing is deleted here: a person (or the explicit auto-approve policy) decides.
 * An inventory whose coverage is not complete nominates nothing at all.
 */
export async function reconcileInventory(
  ctx: EngineContext,
  options: InventoryReconcileOptions,
): Promise<InventoryReconcileReport> {
  const { source } = options;
  const listed = new Set<string>();
  for (const url of options.urls) {
    const id = identityOf(source, { line: 0, url });
    if (id.ok) listed.add(id.documentId);
  }
  const missing: DocumentRecord[] = [];
  for await (const r of ctx.deps.state.listDocuments({ sourceId: source.id })) {
    if (r.currentVersionId === undefined || r.status === 'tombstoned' || listed.has(r.documentId))
      continue;
    missing.push(r);
  }
  const base = {
    sourceId: source.id,
    listed: listed.size,
    missing: missing.map((r) => ({ documentId: r.documentId, url: r.url })),
  };
  if (!options.coverage.complete)
    return { ...base, nominated: 0, refused: options.coverage.reasons };
  const digest = sha256Hex([...options.urls].sort().join('\n')).slice(0, 16);
  let nominated = 0;
  for (const r of missing) {
    const item = await proposeDeletion(ctx, r, 'inventory-reconcile', [
      `absent from inventory ${options.label} (${listed.size} documents listed, digest ${digest}) read at ${ctx.nowIso()}`,
      `last good observation ${r.lastGoodAt ?? r.timestamps.retrievedAt ?? 'unknown'}`,
    ]);
    if (item !== undefined) nominated++;
  }
  return { ...base, nominated };
}
