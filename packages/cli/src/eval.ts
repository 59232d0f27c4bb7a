import { readFileSync, writeFileSync } from 'node:fs';
import type { EmbeddingsInterface } from '@langchain/core/embeddings';
import { documentId, FIELDS, isRagfreshError, type QueryHit, RagfreshError } from '@ragfresh/core';
import { EXIT } from './exit.js';
import type { Runtime } from './runtime.js';
import { table } from './status.js';

/**
 * `ragfresh eval --questions q.jsonl [--against <epoch>] [--json [report.json]]`: how often the
 * passage that answers a question is retrieved, on the current view (and on an earlier epoch).
 *
 * Each line of the questions file is one JSON object: `question` (or `query`) plus at least one
 * of `url` (the page the answer is on), `section` (a heading it sits under) and `passage` (a
 * quoted passage the chunk contains); optional `source` groups a question without a URL.
 * A retrieved chunk answers when it meets every expectation given. Rank = 1-based position of
 * the first answering chunk in the top 10; hit@k = share of questions with rank <= k;
 * MRR = mean of 1/rank (0 when not in the top 10).
 */
export interface EvalQuestion {
  readonly question: string;
  readonly url?: string;
  readonly section?: string;
  readonly passage?: string;
  readonly source?: string;
}

export const EVAL_DEPTH = 10;

export interface QuestionResult {
  readonly question: string;
  readonly source: string;
  /** 1-based rank of the first answering chunk in the top 10, or null. */
  readonly rank: number | null;
  readonly documentId?: string;
  readonly versionId?: string;
}

export interface Scores {
  readonly questions: number;
  readonly hitAt1: number;
  readonly hitAt5: number;
  readonly mrr: number;
}

export interface ViewReport {
  readonly epoch: number;
  readonly label: 'current' | 'against';
  readonly overall: Scores;
  readonly perSource: Readonly<Record<string, Scores>>;
  readonly questions: readonly QuestionResult[];
}

export interface EvalReport {
  readonly embedder: string;
  readonly depth: number;
  readonly views: readonly ViewReport[];
  /** With --against: questions whose rank differs between the two epochs. */
  readonly changed?: ReadonlyArray<{
    readonly question: string;
    readonly against: number | null;
    readonly current: number | null;
  }>;
  /** What --against could not reach (retired versions are kept only for the grace period). */
  readonly notes: readonly string[];
}

function bad(message: string): RagfreshError {
  return new RagfreshError('INVALID_ARGUMENT', message, { scope: 'eval' });
}

const norm = (s: string) => s.normalize('NFC').toLowerCase().replace(/\s+/g, ' ').trim();

/** Parses a questions file (JSON Lines); every problem names the line. */
export function parseQuestions(text: string, file: string): EvalQuestion[] {
  const out: EvalQuestion[] = [];
  for (const [i, raw] of text.split('\n').entries()) {
    const line = raw.trim();
    if (line === '' || line.startsWith('//')) continue;
    const where = `${file}:${i + 1}`;
    let v: Record<string, unknown>;
    try {
      v = JSON.parse(line) as Record<string, unknown>;
    } catch (err) {
      throw bad(`${where} is not JSON (${(err as Error).message}); write one object per line.`);
    }
    const question = v.question ?? v.query;
    if (typeof question !== 'string' || question.trim() === '')
      throw bad(`${where} has no "question"; give the question a reader would ask.`);
    const q: Record<string, string> = { question };
    for (const key of ['url', 'section', 'passage', 'source'] as const) {
      const x = v[key];
      if (x === undefined) continue;
      if (typeof x !== 'string' || x.trim() === '')
        throw bad(`${where}: "${key}" must be a non-empty string.`);
      q[key] = x;
    }
    if (q.url === undefined && q.section === undefined && q.passage === undefined)
      throw bad(`${where} expects nothing; give "url", "section" and/or "passage".`);
    out.push(q as unknown as EvalQuestion);
  }
  if (out.length === 0) throw bad(`${file} holds no questions; write one JSON object per line.`);
  return out;
}

/**
 * documentIds the URL names under each source's identity policy (documentId -> source id),
 * narrowed to the sources that know the document when any does.
 */
async function documentsOf(
  rt: Pick<Runtime, 'config' | 'state'>,
  url: string,
): Promise<Map<string, string>> {
  const ids = new Map<string, string>();
  const known = new Map<string, string>();
  for (const s of rt.config.sources) {
    let id: string;
    try {
      id = documentId(s.id, url, s.identity);
    } catch {
      continue; // Not addressable under this source's policy.
    }
    ids.set(id, s.id);
    if ((await rt.state.getDocument(id)) !== undefined) known.set(id, s.id);
  }
  return known.size > 0 ? known : ids;
}

function answers(hit: QueryHit, q: EvalQuestion, docs: Map<string, string> | undefined): boolean {
  const m = hit.metadata;
  if (docs !== undefined && !docs.has(String(m[FIELDS.documentId]))) return false;
  if (q.section !== undefined && !norm(String(m[FIELDS.heading] ?? '')).includes(norm(q.section)))
    return false;
  if (q.passage !== undefined && !norm(hit.text).includes(norm(q.passage))) return false;
  return true;
}

function score(results: readonly QuestionResult[]): Scores {
  const n = results.length;
  const within = (k: number) => results.filter((r) => r.rank !== null && r.rank <= k).length;
  const rr = results.reduce((a, r) => a + (r.rank === null ? 0 : 1 / r.rank), 0);
  return {
    questions: n,
    hitAt1: n === 0 ? 0 : within(1) / n,
    hitAt5: n === 0 ? 0 : within(5) / n,
    mrr: n === 0 ? 0 : rr / n,
  };
}

/** "HashingEmbeddings, 256 dimensions" or "OpenAIEmbeddings text-embedding-3-small, 1536 dimensions". */
export function embedderName(embeddings: EmbeddingsInterface, dimensions: number): string {
  const e = embeddings as unknown as { model?: unknown; modelName?: unknown };
  const model = typeof e.model === 'string' ? e.model : e.modelName;
  const name = (embeddings as object).constructor?.name ?? 'embeddings';
  return `${name}${typeof model === 'string' ? ` ${model}` : ''}, ${dimensions} dimensions`;
}

/** A question with its embedding and the documents its URL names. */
interface PreparedQuestion {
  readonly q: EvalQuestion;
  readonly vector: readonly number[];
  readonly docs: Map<string, string> | undefined;
}

async function evalView(
  rt: Pick<Runtime, 'connector'>,
  prepared: readonly PreparedQuestion[],
  view: { epoch: number; label: ViewReport['label']; access: readonly string[] },
): Promise<ViewReport> {
  const results: QuestionResult[] = [];
  for (const { q, vector, docs } of prepared) {
    // The reader's scope, in the store's filter like a real reader's (default: public only).
    const hits = await rt.connector.query(vector, EVAL_DEPTH, {
      view: { kind: 'epoch', epoch: view.epoch },
      access: view.access,
    });
    const at = hits.findIndex((h) => answers(h, q, docs));
    const hit = at < 0 ? undefined : hits[at];
    const source =
      q.source ??
      (docs === undefined ? undefined : [...new Set(docs.values())].join('|')) ??
      (hit === undefined ? '(any)' : String(hit.metadata[FIELDS.sourceId]));
    results.push({
      question: q.question,
      source: source === '' ? '(no source)' : source,
      rank: at < 0 ? null : at + 1,
      ...(hit === undefined
        ? {}
        : {
            documentId: String(hit.metadata[FIELDS.documentId]),
            versionId: String(hit.metadata[FIELDS.versionId]),
          }),
    });
  }
  const bySource = new Map<string, QuestionResult[]>();
  for (const r of results) bySource.set(r.source, [...(bySource.get(r.source) ?? []), r]);
  return {
    ...view,
    overall: score(results),
    perSource: Object.fromEntries([...bySource].map(([s, rs]) => [s, score(rs)])),
    questions: results,
  };
}

/**
 * What an earlier epoch's view can still show. A replaced version is deleted once the
 * published epoch is `graceEpochs` (default 1) past its retirement, so the view at epoch X is
 * complete only for documents whose version valid at X has not been collected yet.
 */
async function reachNotes(
  rt: Pick<Runtime, 'config' | 'connector' | 'state'>,
  against: number,
  current: number,
  prepared: readonly PreparedQuestion[],
): Promise<string[]> {
  const notes: string[] = [];
  let changedSince = 0;
  for (const source of rt.config.sources)
    for await (const r of rt.state.listDocuments({ sourceId: source.id }))
      if ((r.publishedEpoch ?? 0) > against) changedSince++;
  if (current - against > 1 && changedSince > 0)
    notes.push(
      `epoch ${against} is ${current - against} epochs behind ${current}: ${changedSince} documents were published after it, and the versions they replaced are deleted once the epoch is past their retirement by the grace period (1 epoch by default), so those documents show only where their epoch-${against} version is still stored; --against reliably reaches the previous epoch (${current - 1}) only.`,
    );
  const missing: string[] = [];
  for (const { q, docs } of prepared) {
    if (q.url === undefined || docs === undefined) continue;
    let visible = false;
    for (const id of docs.keys()) {
      const chunks = await rt.connector.listChunks(id);
      if (
        chunks.some(
          (c) =>
            Number(c.metadata[FIELDS.from]) <= against && against < Number(c.metadata[FIELDS.to]),
        )
      )
        visible = true;
    }
    if (!visible) missing.push(q.url);
  }
  if (missing.length > 0)
    notes.push(
      `${missing.length} expected page(s) have no chunks in the epoch-${against} view (not yet published then, or the version was collected): ${[...new Set(missing)].slice(0, 5).join(', ')}${missing.length > 5 ? ', …' : ''}`,
    );
  return notes;
}

export async function runEval(
  rt: Pick<Runtime, 'config' | 'connector' | 'state' | 'embeddings'>,
  questions: readonly EvalQuestion[],
  options: { readonly against?: number; readonly access?: readonly string[] } = {},
): Promise<EvalReport> {
  const current = await rt.connector.readEpoch();
  const access = options.access ?? [];
  const prepared: PreparedQuestion[] = [];
  for (const q of questions)
    prepared.push({
      q,
      vector: await rt.embeddings.embedQuery(q.question),
      docs: q.url === undefined ? undefined : await documentsOf(rt, q.url),
    });
  const dims = prepared[0]?.vector.length ?? 0;
  const views = [await evalView(rt, prepared, { epoch: current, label: 'current', access })];
  const notes: string[] = [];
  let changed: EvalReport['changed'];
  if (options.against !== undefined) {
    const against = options.against;
    if (!Number.isInteger(against) || against < 1 || against > current)
      throw bad(
        `--against ${against} is not a published epoch; the store is at epoch ${current} (use 1..${current}).`,
      );
    const old = await evalView(rt, prepared, { epoch: against, label: 'against', access });
    views.unshift(old);
    notes.push(...(await reachNotes(rt, against, current, prepared)));
    changed = old.questions.flatMap((o, i) => {
      const now = views[1]!.questions[i]!;
      return o.rank === now.rank
        ? []
        : [{ question: o.question, against: o.rank, current: now.rank }];
    });
  }
  return {
    embedder: embedderName(rt.embeddings, dims),
    depth: EVAL_DEPTH,
    views,
    ...(changed === undefined ? {} : { changed }),
    notes,
  };
}

const pct = (x: number) => x.toFixed(3);

export function renderEval(report: EvalReport): string {
  const sources = [...new Set(report.views.flatMap((v) => Object.keys(v.perSource)))].sort();
  const head = ['source', 'questions'];
  for (const v of report.views)
    head.push(`hit@1 e${v.epoch}`, `hit@5 e${v.epoch}`, `MRR e${v.epoch}`);
  const row = (name: string, pick: (v: ViewReport) => Scores | undefined) => {
    const cells = [name, String(pick(report.views[0]!)?.questions ?? 0)];
    for (const v of report.views) {
      const s = pick(v);
      cells.push(s ? pct(s.hitAt1) : '-', s ? pct(s.hitAt5) : '-', s ? pct(s.mrr) : '-');
    }
    return cells;
  };
  const rows = [
    ...sources.map((s) => row(s, (v) => v.perSource[s])),
    row('overall', (v) => v.overall),
  ];
  const lines = [
    `eval: ${report.views[0]!.overall.questions} questions; embedder ${report.embedder}; top ${report.depth}; ${report.views.map((v) => `epoch ${v.epoch} (${v.label})`).join(' vs ')}`,
    '',
    table(head, rows),
  ];
  const misses = report.views[report.views.length - 1]!.questions.filter((q) => q.rank === null);
  if (misses.length > 0) {
    lines.push('', 'not in the top 10 (current view):');
    for (const m of misses.slice(0, 20)) lines.push(`  ${m.source}: ${m.question}`);
    if (misses.length > 20) lines.push(`  … ${misses.length - 20} more`);
  }
  if (report.changed !== undefined) {
    lines.push('', `rank changes (epoch ${report.views[0]!.epoch} -> ${report.views[1]!.epoch}):`);
    if (report.changed.length === 0) lines.push('  none');
    for (const c of report.changed)
      lines.push(`  ${c.against ?? '-'} -> ${c.current ?? '-'}  ${c.question}`);
  }
  for (const n of report.notes) lines.push('', `note: ${n}`);
  return lines.join('\n');
}

/** The `eval` command: table on stdout, JSON on stdout (`--json`) or in a file (`--json file`). */
export async function evalCommand(
  rt: Runtime,
  opts: {
    questions: string;
    against?: number;
    access?: readonly string[];
    json: boolean;
    jsonFile?: string;
  },
  print: (s: string) => void,
): Promise<number> {
  let text: string;
  try {
    text = readFileSync(opts.questions, 'utf8');
  } catch (err) {
    print(
      `ragfresh: cannot read ${opts.questions} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); check --questions.`,
    );
    return EXIT.usage;
  }
  let report: EvalReport;
  try {
    const questions = parseQuestions(text, opts.questions);
    report = await runEval(rt, questions, {
      ...(opts.against === undefined ? {} : { against: opts.against }),
      ...(opts.access === undefined ? {} : { access: opts.access }),
    });
  } catch (err) {
    if (!isRagfreshError(err, 'INVALID_ARGUMENT')) throw err;
    print(`ragfresh: ${err.message.replace(/^\[ragfresh\] \[eval\] /, '')}`);
    return EXIT.usage;
  }
  if (opts.jsonFile !== undefined) {
    writeFileSync(opts.jsonFile, `${JSON.stringify(report, null, 2)}\n`);
    print(renderEval(report));
    print(`\nwrote ${opts.jsonFile}`);
  } else print(opts.json ? JSON.stringify(report, null, 2) : renderEval(report));
  return EXIT.ok;
}
