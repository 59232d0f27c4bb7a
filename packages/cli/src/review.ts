import type { ReviewItem } from '@ragfresh/core';
import type { Print } from './commands.js';
import { EXIT } from './exit.js';
import type { Runtime } from './runtime.js';
import { table } from './status.js';

export interface ReviewOptions {
  readonly by: string;
  readonly json: boolean;
  /** `list --all`: decided items too. */
  readonly all: boolean;
  readonly sources?: readonly string[];
  readonly reason?: string;
  /** approve|reject every pending deletion whose page answered 200/304 after it was proposed. */
  readonly allWithdrawn: boolean;
}

function renderReview(items: readonly ReviewItem[]): string {
  if (items.length === 0) return 'review queue is empty.';
  return table(
    ['id', 'kind', 'reason', 'status', 'source', 'url', 'evidence'],
    items.map((i) => [
      i.id,
      i.kind,
      i.reason,
      i.status,
      i.sourceId,
      i.url,
      i.evidence.at(-1) ?? '',
    ]),
  );
}

async function show(rt: Runtime, id: string, json: boolean, print: Print): Promise<number> {
  const item = await rt.state.getReviewItem(id);
  if (item === undefined) {
    print(`ragfresh: no review item "${id}"; see \`ragfresh review list --all\`.`);
    return EXIT.usage;
  }
  const record = await rt.state.getDocument(item.documentId);
  if (json) {
    print(JSON.stringify({ item, document: record ?? null }, null, 2));
    return EXIT.ok;
  }
  print(`${item.id}  ${item.kind} / ${item.reason}  (${item.status})`);
  print(`  ${item.url}  (source ${item.sourceId}, proposed ${item.createdAt})`);
  if (item.decidedAt !== undefined) print(`  decided ${item.decidedAt} by ${item.decidedBy}`);
  if (item.versionId !== undefined) print(`  held version ${item.versionId}`);
  print('  evidence:');
  for (const e of item.evidence) print(`    ${e}`);
  if (record !== undefined) {
    print(
      `  document now: ${record.status}${record.statusReasons.length > 0 ? ` — ${record.statusReasons.join('; ')}` : ''}; current version ${record.currentVersionId ?? '-'}`,
    );
    print('  observation history:');
    print(
      table(
        ['at', 'event', 'version', 'reasons'],
        (record.history ?? []).map((h) => [h.at, h.event, h.versionId ?? '', h.reasons.join('; ')]),
      ).replace(/^/gm, '    '),
    );
  }
  return EXIT.ok;
}

/** Pending items the bulk filters select (by id, by source and reason, or contradicted by a later answer). */
async function select(
  rt: Runtime,
  ids: readonly string[],
  opts: ReviewOptions,
): Promise<ReviewItem[]> {
  const pending = await rt.state.listReviewItems({ status: 'pending' });
  if (ids.length > 0) return pending.filter((i) => ids.includes(i.id));
  const out: ReviewItem[] = [];
  for (const i of pending) {
    if (opts.sources !== undefined && !opts.sources.includes(i.sourceId)) continue;
    if (opts.reason !== undefined && i.reason !== opts.reason) continue;
    if (opts.allWithdrawn) {
      // Its evidence no longer holds: the page answered (a good observation) after the proposal.
      const r = await rt.state.getDocument(i.documentId);
      if (i.kind !== 'deletion' || r?.lastGoodAt === undefined || r.lastGoodAt <= i.createdAt)
        continue;
    }
    out.push(i);
  }
  return out;
}

/** `review list|show|approve|accept|reject`, with bulk forms by source, reason and `--all-withdrawn`. */
export async function reviewCommand(
  rt: Runtime,
  args: readonly string[],
  opts: ReviewOptions,
  print: Print,
): Promise<number> {
  const [action = 'list', ...ids] = args;
  if (action === 'list') {
    const items = await rt.state.listReviewItems(opts.all ? {} : { status: 'pending' });
    const shown = items.filter(
      (i) =>
        (opts.sources === undefined || opts.sources.includes(i.sourceId)) &&
        (opts.reason === undefined || i.reason === opts.reason),
    );
    print(opts.json ? JSON.stringify(shown, null, 2) : renderReview(shown));
    return EXIT.ok;
  }
  if (action === 'show') {
    if (ids[0] === undefined) {
      print('ragfresh: review show needs an item id; see `ragfresh review list`.');
      return EXIT.usage;
    }
    return show(rt, ids[0], opts.json, print);
  }
  if (action !== 'approve' && action !== 'accept' && action !== 'reject') {
    print(
      `ragfresh: unknown review action "${action}"; use list, show <id>, approve|accept <id...> or reject <id...> (or --source/--reason/--all-withdrawn).`,
    );
    return EXIT.usage;
  }
  const bulk = opts.sources !== undefined || opts.reason !== undefined || opts.allWithdrawn;
  if (ids.length === 0 && !bulk) {
    print(
      `ragfresh: review ${action} needs item ids, or --source/--reason/--all-withdrawn; see \`ragfresh review list\`.`,
    );
    return EXIT.usage;
  }
  const items = await select(rt, ids, opts);
  const missing = ids.filter((id) => !items.some((i) => i.id === id));
  if (missing.length > 0) {
    print(
      `ragfresh: no pending review item ${missing.map((m) => `"${m}"`).join(', ')}; see \`ragfresh review list\`.`,
    );
    return EXIT.usage;
  }
  if (items.length === 0) {
    print('no pending review item matches; nothing done.');
    return EXIT.ok;
  }
  if (action === 'reject') {
    let n = 0;
    for (const i of items) if (await rt.engine.reject(i.id, opts.by)) n++;
    print(`rejected ${n} of ${items.length} review items.`);
    return n === items.length ? EXIT.ok : EXIT.failure;
  }
  const report = await rt.engine.approveMany(
    items.map((i) => i.id),
    opts.by,
  );
  if (opts.json) print(JSON.stringify(report, null, 2));
  else {
    print(`approved ${report.approved.length} of ${items.length} review items.`);
    for (const b of report.blocked) print(`  blocked ${b}`);
  }
  return report.blocked.length === 0 ? EXIT.ok : EXIT.failure;
}
