import {
  type AuditEntry,
  type DocumentRecord,
  FileAuditLog,
  documentId as makeDocumentId,
} from '@ragfresh/core';
import {
  collectGarbage,
  epochAsOf,
  type RemovalSelector,
  removeDocuments,
  undoRemoval,
} from '@ragfresh/engine/governance';
import { retentionOf } from '@ragfresh/engine/stages';
import { auditLogPath, type ResolvedConfig } from './config.js';
import { EXIT } from './exit.js';
import type { Runtime } from './runtime.js';
import { table } from './status.js';

type Print = (text: string) => void;

// `ragfresh remove`, `audit`, `gc` and the as-of reads (docs/governance.md).

function days(ms: number): string {
  return ms >= 86_400_000 && ms % 86_400_000 === 0
    ? `${ms / 86_400_000}d`
    : ms >= 3_600_000
      ? `${(ms / 3_600_000).toFixed(1)}h`
      : `${Math.round(ms / 1000)}s`;
}

/**
 * How far back as-of reads reach: the shortest retention of the sources (a source without one
 * keeps replaced versions only for the retire grace period).
 */
export function asOfReachMs(config: ResolvedConfig): number {
  const grace = config.settings.publish.retireGraceMs;
  const all = config.sources.map((s) => retentionOf(config.settings, s.id) ?? grace);
  return all.length === 0 ? (config.settings.publish.retentionMs ?? grace) : Math.min(...all);
}

/**
 * The epoch in force at `at`, from the epoch history, while the versions current then are
 * retained; otherwise the one line that says why not.
 */
export async function viewAsOf(
  rt: Pick<Runtime, 'config' | 'state'>,
  at: Date,
): Promise<{ readonly epoch: number; readonly since: string } | string> {
  const now = Date.now();
  const reach = asOfReachMs(rt.config);
  if (now - at.getTime() > reach)
    return `ragfresh: ${at.toISOString()} is past the retention window (${days(reach)}): the versions current then are no longer kept; as-of reaches back to ${new Date(now - reach).toISOString()} (set \`retention\` in the config to keep more).`;
  const found = await epochAsOf(rt.state, at);
  if (found !== undefined) return found;
  const first = (await rt.state.listEpochRecords())[0];
  if (first !== undefined && first.epoch > 1)
    return `ragfresh: the epoch history starts at ${first.at} (epoch ${first.epoch}); ${at.toISOString()} is before it, so the epoch in force then is not known.`;
  return { epoch: 0, since: 'the start (nothing was published yet)' };
}

/** The version of a document that was current at `epoch`, from its history. */
export function versionAsOf(
  record: DocumentRecord,
  epoch: number,
): { readonly versionId: string; readonly at: string; readonly epoch: number } | undefined {
  let current: { versionId: string; at: string; epoch: number } | undefined;
  for (const h of record.history ?? []) {
    if (h.epoch === undefined || h.epoch > epoch) continue;
    if (h.event === 'removed') current = undefined;
    else if (['published', 'replaced', 'repaired'].includes(h.event) && h.versionId !== undefined)
      current = { versionId: h.versionId, at: h.at, epoch: h.epoch };
  }
  return current;
}

export interface RemoveOptions {
  readonly urls: readonly string[];
  readonly prefix?: string;
  readonly host?: string;
  readonly sources?: readonly string[];
  readonly reason?: string;
  readonly by: string;
  readonly undo: boolean;
  readonly json: boolean;
}

const usage = (line: string): number => {
  process.stderr.write(`ragfresh: ${line}\n`);
  return EXIT.usage;
};

/** The one selector a removal names, or the usage line saying what is wrong. */
function selectorOf(opts: RemoveOptions): RemovalSelector | string {
  const given = [
    ...opts.urls.map((url) => ({ kind: 'url', url }) as const),
    ...(opts.prefix === undefined ? [] : [{ kind: 'prefix', prefix: opts.prefix } as const]),
    ...(opts.host === undefined ? [] : [{ kind: 'host', host: opts.host } as const]),
    ...(opts.sources ?? []).map((sourceId) => ({ kind: 'source', sourceId }) as const),
  ];
  if (given.length !== 1)
    return `remove needs exactly one of <url>, --prefix p, --host h, --source id (got ${given.length}); e.g. ragfresh remove https://docs.example.org/page --reason "takedown request 42" --by alice.`;
  return given[0]!;
}

export async function removeCommand(
  rt: Runtime,
  opts: RemoveOptions,
  print: Print,
): Promise<number> {
  if (opts.undo) {
    if (opts.urls.length !== 1 || opts.prefix !== undefined || opts.host !== undefined)
      return usage('remove --undo needs one URL; e.g. ragfresh remove --undo <url> --by alice.');
    const lifted = await undoRemoval(rt.context(), opts.urls[0]!, opts.by);
    if (lifted === 0) {
      print(`ragfresh: ${opts.urls[0]} has no removal to undo.`);
      return EXIT.usage;
    }
    print(
      `removal of ${opts.urls[0]} undone by ${opts.by} (${lifted} tombstone(s) lifted); the next refresh fetches it again.`,
    );
    return EXIT.ok;
  }
  const selector = selectorOf(opts);
  if (typeof selector === 'string') return usage(selector);
  if (opts.reason === undefined || opts.reason.trim() === '')
    return usage(
      'remove needs --reason (why it is removed, kept in the tombstone and the audit log); e.g. --reason "takedown request 42".',
    );
  if (selector.kind === 'source' && !rt.config.sources.some((s) => s.id === selector.sourceId))
    return usage(`remove --source ${selector.sourceId}: no such source in the config.`);
  const r = await removeDocuments(rt.context(), selector, { reason: opts.reason, by: opts.by });
  if (opts.json) print(JSON.stringify(r, null, 2));
  else
    print(
      `removed ${r.documents} document(s) at epoch ${r.epoch} (${r.retired} were current): ${r.chunksDeleted} chunks and ${r.snapshotsDeleted} raw snapshots deleted${r.snapshotsShared > 0 ? `, ${r.snapshotsShared} snapshot(s) kept because another document holds the same body` : ''}; ${r.compaction.note}. Tombstones keep the URL(s) from being fetched or imported until \`ragfresh remove --undo <url>\`.`,
    );
  return EXIT.ok;
}

function renderAudit(entries: readonly AuditEntry[]): string {
  if (entries.length === 0) return 'audit log is empty.';
  return table(
    ['seq', 'at', 'action', 'by', 'reason', 'documents', 'details'],
    entries.map((e) => [
      String(e.seq),
      e.at,
      e.action,
      e.by,
      e.reason ?? '',
      (e.documents ?? []).join(' '),
      Object.entries(e.details ?? {})
        .map(([k, v]) => `${k}=${String(v)}`)
        .join(' '),
    ]),
  );
}

/**
 * `ragfresh audit [<url>]`: prints the log (the URL's entries only, by its documentIds) and
 * verifies the whole chain; a broken chain is one line naming the first bad entry, exit 1.
 */
export function auditCommand(
  config: ResolvedConfig,
  opts: { readonly url?: string; readonly json: boolean },
  print: Print,
): number {
  const log = new FileAuditLog(auditLogPath(config));
  const verdict = log.verify();
  let ids: Set<string> | undefined;
  if (opts.url !== undefined) {
    ids = new Set();
    for (const s of config.sources) {
      try {
        ids.add(makeDocumentId(s.id, opts.url, s.identity));
      } catch {
        // Not addressable under this source's policy.
      }
    }
  }
  const shown = verdict.entries.filter(
    (e) => ids === undefined || (e.documents ?? []).some((d) => ids.has(d)),
  );
  print(opts.json ? JSON.stringify(shown, null, 2) : renderAudit(shown));
  if (!verdict.ok) {
    process.stderr.write(
      `ragfresh: audit log ${log.path} is broken at line ${verdict.line}: the entry ${verdict.problem}; entries from there on cannot be trusted — restore the file from a backup.\n`,
    );
    return EXIT.failure;
  }
  if (!opts.json) print(`\nchain verified: ${verdict.entries.length} entries.`);
  return EXIT.ok;
}

function kib(bytes: number): string {
  return bytes < 1024 ? `${bytes} B` : `${(bytes / 1024).toFixed(1)} KiB`;
}

/** `ragfresh gc [--dry-run]`: retention applied to raw snapshots and retired versions. */
export async function gcCommand(
  rt: Runtime,
  opts: { readonly dryRun: boolean; readonly json: boolean },
  print: Print,
): Promise<number> {
  const r = await collectGarbage(rt.context(), {
    dryRun: opts.dryRun,
    retentionOf: (sourceId) => retentionOf(rt.config.settings, sourceId),
  });
  if (opts.json) {
    print(JSON.stringify({ dryRun: opts.dryRun, ...r }, null, 2));
    return EXIT.ok;
  }
  const verb = opts.dryRun ? 'would delete' : 'deleted';
  if (r.snapshots.length > 0)
    print(
      table(
        ['snapshot', 'url', 'observed', 'size'],
        r.snapshots.map((s) => [s.digest.slice(0, 16), s.url ?? '', s.observedAt, kib(s.bytes)]),
      ),
    );
  if (r.retired.length > 0)
    print(
      table(
        ['retired version', 'document', 'left the view', 'chunks'],
        r.retired.map((v) => [
          v.versionId,
          v.documentId,
          `${v.at} (epoch ${v.epoch})`,
          String(v.chunks),
        ]),
      ),
    );
  print(
    `gc ${verb} ${r.snapshots.length} raw snapshot(s) (${kib(r.snapshotBytes)}) and ${r.retired.length} retired version(s) (${r.retiredChunks} chunks); ${r.snapshotsNeeded} snapshot(s) past retention kept because a current version needs them.`,
  );
  return EXIT.ok;
}

/** Hours between `watch`'s retention passes. */
export const WATCH_GC_EVERY_MS = 3_600_000;
