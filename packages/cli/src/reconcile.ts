import type { Print } from './commands.js';
import { EXIT } from './exit.js';
import type { Runtime } from './runtime.js';

/** `ragfresh verify [--repair]`: the full two-way reconciliation of state and store. */
export async function verifyCommand(
  rt: Runtime,
  opts: { readonly repair: boolean; readonly json: boolean },
  print: Print,
): Promise<number> {
  const r = await rt.engine.verify({ repair: opts.repair });
  if (opts.json) print(JSON.stringify(r, null, 2));
  else {
    print(
      `store epoch ${r.storeEpoch}; ${r.currentDocuments} current documents in the state; ${r.missing.length} missing or short in the store.`,
    );
    for (const m of r.missing.slice(0, 20))
      print(`  missing  ${m.url}  (${m.visibleChunks} of ${m.expectedChunks} chunks visible)`);
    if (r.missing.length > 20) print(`  … ${r.missing.length - 20} more missing`);
    if (!r.scanned)
      print(
        `orphans: not checked — the ${rt.connector.store} connector cannot enumerate its chunks (its manifest does not declare scan); this is not a clean bill.`,
      );
    else {
      print(
        `orphans: ${r.orphans.length} stored versions the state does not account for (${r.scannedChunks} chunks scanned).`,
      );
      for (const o of r.orphans.slice(0, 20))
        print(
          `  orphan   ${o.documentId} ${o.versionId}  (${o.chunks} chunks${o.visible ? ', visible to readers' : ''})`,
        );
    }
    if (opts.repair)
      print(
        `repaired: ${r.repaired} documents republished from raw snapshots (no refetch); ${r.orphansRemoved} orphan versions removed; ${r.notRepaired.length} without a raw snapshot (fetched in full by the next refresh).`,
      );
    else if (r.missing.length + r.orphans.length > 0)
      print('run `ragfresh verify --repair` to fix both sides.');
  }
  const open = opts.repair ? r.notRepaired.length : r.missing.length + r.orphans.length;
  return open > 0 ? EXIT.objectiveViolated : EXIT.ok;
}

/** `ragfresh recover`: rebuilds the state from the store's own metadata, and says what it could not. */
export async function recoverCommand(
  rt: Runtime,
  opts: { readonly json: boolean },
  print: Print,
): Promise<number> {
  const r = await rt.engine.recover();
  if (opts.json) {
    print(JSON.stringify(r, null, 2));
    return EXIT.ok;
  }
  print(
    `recovered ${r.documents} documents from the ${rt.connector.store} store at epoch ${r.storeEpoch} (read by ${r.readBy}); ${r.skipped} already in the state; ${r.retiredVersions} stale versions scheduled for retirement; ${r.tombstones} tombstones read back from the mirror.`,
  );
  print('not recovered:');
  for (const n of r.notRecovered) print(`  - ${n.line}`);
  print('next: `ragfresh refresh --all` fetches each page in full once and rebuilds the rest.');
  return EXIT.ok;
}
