import {
  type Connector,
  type DocumentRecord,
  FIELDS,
  type ListedChunk,
  metadataCitation,
  type ReviewItem,
  type RunSummary,
  type StateStore,
} from '@ragfresh/core';
import type { ResolvedConfig } from '../config.js';
import { versionAsOf, viewAsOf } from '../governance.js';
import {
  describeAccess,
  describeRetention,
  type RegisterEntry,
  sourceRegister,
} from '../sources.js';
import { sourceStatuses } from '../status.js';
import { lineChart } from './chart.js';
import { sideBySide } from './diff.js';
import {
  docLink,
  duration,
  externalLink,
  type Html,
  html,
  lag,
  localHref,
  raw,
  when,
} from './html.js';
import { changedInRun, groupReview, sourceFreshness, versionRows } from './model.js';
import type { SnapshotSubject, SnapshotText, VersionTexts } from './versions.js';

/** What every page reads: the same state and store the CLI uses, and the raw snapshot texts. */
export interface PageContext {
  readonly config: ResolvedConfig;
  readonly state: StateStore;
  readonly connector: Connector;
  readonly texts: VersionTexts;
  /** How many runs per source the charts and the runs page show. */
  readonly runs: number;
}

/** A form's hidden CSRF field and whether actions are shown at all. */
export interface ActionContext {
  readonly csrf?: string;
}

const as = (h: unknown): Html => h as Html;

async function recordsOf(state: StateStore, sourceId?: string): Promise<DocumentRecord[]> {
  const out: DocumentRecord[] = [];
  for await (const r of state.listDocuments(sourceId === undefined ? {} : { sourceId }))
    out.push(r);
  return out;
}

function stateCell(state: string): Html {
  return as(html`<span class="state-${state}">${state}</span>`);
}

// ---------------------------------------------------------------------------------------------
// Sources

export async function sourcesPage(ctx: PageContext): Promise<Html> {
  const statuses = await sourceStatuses(ctx.config, ctx.state);
  const pending = await ctx.state.listReviewItems({ status: 'pending' });
  const register = new Map(sourceRegister(ctx.config).map((r) => [r.sourceId, r]));
  const sections: Html[] = [];
  for (const s of statuses) {
    const source = ctx.config.sources.find((x) => x.id === s.sourceId)!;
    const entry = register.get(s.sourceId)!;
    const runs = (await ctx.state.listRuns(s.sourceId, ctx.runs)).reverse();
    const { points, summary: f } = sourceFreshness(
      runs,
      await recordsOf(ctx.state, s.sourceId),
      s.objectiveMs,
    );
    const labels = points.map((p) => ({ runId: p.runId, at: p.startedAt }));
    const review = pending.filter((i) => i.sourceId === s.sourceId);
    const hours = (v: number) => duration(v);
    sections.push(
      as(html`<section class="card" data-source="${s.sourceId}">
<h2>${s.sourceId} ${stateCell(s.state)}</h2>
<table class="source-summary">
<tr><th>documents</th><td class="num">${s.documents}</td><th>healthy / degraded / quarantined / tombstoned / never published</th><td>${s.counts.healthy} / ${s.counts.degraded} / ${s.counts.quarantined} / ${s.counts.tombstoned} / ${s.unpublished}</td></tr>
<tr><th>obs-age (last run)</th><td class="num" data-metric="obs-age" data-value="${f.observationAgeMs ?? ''}">${duration(f.observationAgeMs)}</td><th>objective</th><td class="${f.objectiveMet ? 'ok' : 'bad'}" data-metric="objective">${f.objectiveMet ? 'met' : 'VIOLATED'} (${duration(s.objectiveMs)})</td></tr>
<tr><th>prop-lag</th><td class="num" data-metric="prop-lag" data-value="${f.propagationLagMs ?? ''}">${lag(f.propagationLagMs, f.propagationSkewMs)}</td><th>last run</th><td>${when(s.lastRunAt)} ${s.lastRunComplete === false ? '(partial coverage)' : ''}</td></tr>
<tr><th>retrieved (oldest)</th><td>${when(s.retrievedAt)}</td><th>content changed / queryable (latest)</th><td>${when(s.contentChangedAt)} / ${when(s.queryableAt)}</td></tr>
<tr><th>review pending</th><td class="num">${review.length === 0 ? '0' : html`<a href="${localHref('/review', { source: s.sourceId })}">${review.length}</a>`}</td><th>schedule</th><td>every ${duration(source.everyMs)}</td></tr>
</table>
${registerTable(entry)}
${s.alerts.length === 0 ? html`<p class="muted">no alerts in the last run</p>` : html`<h3>Alerts (last run)</h3><ul class="alerts">${s.alerts.map((a) => html`<li>${a}</li>`)}</ul>`}
${s.reasons.length === 0 ? '' : html`<details><summary>${s.reasons.length} documents not healthy</summary><ul>${s.reasons.map((r) => html`<li>${r}</li>`)}</ul></details>`}
${
  (s.canaries ?? []).length === 0
    ? ''
    : html`<h3>Canaries</h3><table><tr><th>query</th><th>phase</th><th>result</th><th>epoch</th><th>at</th></tr>${(s.canaries ?? []).map((c) => html`<tr><td>${c.query}</td><td>${c.phase}</td><td class="${c.ok ? 'ok' : 'bad'}">${c.ok ? `ok rank ${c.rank ?? '?'}` : `FAILED ${c.reason ?? ''}`}</td><td class="num">${c.epoch}</td><td>${when(c.at)}</td></tr>`)}</table>`
}
<h3>Last ${points.length} runs</h3>
<div class="charts">
${lineChart({
  name: 'freshness',
  title: `${s.sourceId}: observation age and propagation lag per run`,
  runs: labels,
  series: [
    {
      key: 'obs-age',
      label: 'observation age',
      color: '#1f5fbf',
      values: points.map((p) => p.observationAgeMs),
    },
    {
      key: 'prop-lag',
      label: 'propagation lag',
      color: '#e08a00',
      values: points.map((p) => p.propagationLagMs),
    },
  ],
  format: hours,
  reference: { label: 'objective', value: s.objectiveMs },
})}
${lineChart({
  name: 'not-modified',
  title: `${s.sourceId}: 304 ratio per run`,
  runs: labels,
  series: [
    {
      key: 'ratio-304',
      label: '304 ratio',
      color: '#5b8c3a',
      values: points.map((p) => p.notModifiedRatio),
    },
  ],
  format: (v) => `${Math.round(v * 100)}%`,
  max: 1,
})}
${lineChart({
  name: 'work',
  title: `${s.sourceId}: documents published and chunks embedded per run`,
  runs: labels,
  series: [
    {
      key: 'published',
      label: 'published',
      color: '#7b3fb5',
      values: points.map((p) => p.published),
    },
    { key: 'embedded', label: 'embedded', color: '#888', values: points.map((p) => p.embedded) },
  ],
  format: (v) => String(Math.round(v)),
})}
</div>
<details><summary>the numbers behind the charts</summary>
<table class="run-series"><tr><th>run</th><th>coverage</th><th>obs-age</th><th>prop-lag</th><th>304 ratio</th><th>published</th><th>embedded</th></tr>
${points.map((p) => html`<tr><td><a href="${localHref('/runs', { source: s.sourceId, run: p.runId })}">${when(p.startedAt)}</a></td><td>${p.complete ? 'complete' : 'partial'}</td><td class="num">${duration(p.observationAgeMs)}</td><td class="num">${lag(p.propagationLagMs, p.propagationSkewMs)}</td><td class="num">${p.notModifiedRatio === undefined ? '–' : `${Math.round(p.notModifiedRatio * 100)}%`}</td><td class="num">${p.published}</td><td class="num">${p.embedded}</td></tr>`)}
</table>
<p class="muted">Per-run observation age and propagation lag are rebuilt from the documents' histories (see docs/ui.md); the summary above the charts is the last of these points (<code>ragfresh status</code> judges the documents' last good observation against the current time instead).</p>
</details>
</section>`),
    );
  }
  return as(html`${sections.length === 0 ? html`<p>No sources configured.</p>` : sections}`);
}

/** The source's register entry (config alone): who answers for it, on what grounds, who reads it. */
function registerTable(r: RegisterEntry): Html {
  const permission =
    r.permission === undefined
      ? undefined
      : `${r.permission.basis}${r.permission.note === undefined ? '' : ` (${r.permission.note})`}`;
  const cell = (key: string, value: string | undefined) =>
    html`<td data-register="${key}"${value === undefined ? raw(' class="bad"') : ''}>${value ?? 'missing'}</td>`;
  return as(html`<table class="source-register">
<tr><th>owner</th>${cell('owner', r.owner)}<th>permission</th>${cell('permission', permission)}</tr>
<tr><th>licence</th><td data-register="licence">${r.licence ?? '–'}</td><th>intended use</th><td data-register="intended-use">${r.intendedUse ?? '–'}</td></tr>
<tr><th>access</th><td data-register="access">${describeAccess(r.access)}</td><th>retention</th><td data-register="retention">${describeRetention(r.retentionMs)}</td></tr>
</table>
${r.gaps.length === 0 ? '' : html`<p class="bad" data-register="gaps">register incomplete: ${r.gaps.join(', ')} (set them in the config; see docs/governance.md)</p>`}`);
}

// ---------------------------------------------------------------------------------------------
// Review queue

function decideForm(ids: readonly string[], a: ActionContext, label: string): Html {
  if (a.csrf === undefined) return as('');
  return as(html`<form class="inline" method="post" action="/review/decide">
<input type="hidden" name="_csrf" value="${a.csrf}">
${ids.map((id) => html`<input type="hidden" name="id" value="${id}">`)}
<button class="approve" name="action" value="approve" data-action="approve">Approve ${label}</button>
<button class="reject" name="action" value="reject" data-action="reject">Reject ${label}</button>
</form>`);
}

export async function reviewPage(
  ctx: PageContext,
  a: ActionContext,
  filter: { readonly source?: string; readonly all?: boolean },
): Promise<Html> {
  const items = (
    await ctx.state.listReviewItems(filter.all === true ? {} : { status: 'pending' })
  ).filter((i) => filter.source === undefined || i.sourceId === filter.source);
  const groups = groupReview(items);
  const toggle = html`<p>${filter.all === true ? html`<a href="/review">pending only</a>` : html`<a href="/review?all=1">include decided items</a>`}</p>`;
  if (groups.length === 0) return as(html`${toggle}<p>The review queue is empty.</p>`);
  return as(html`${toggle}
${groups.map(
  (g) => html`<section class="card" data-kind="${g.kind}">
<h2>${g.kind} (${g.reasons.reduce((n, r) => n + r.items.length, 0)})</h2>
${g.reasons.map((r) => {
  const pendingIds = r.items.filter((i) => i.status === 'pending').map((i) => i.id);
  return html`<div class="group" data-reason="${r.reason}">
<h3>${r.reason} — ${r.items.length} items</h3>
${
  a.csrf === undefined || pendingIds.length === 0
    ? ''
    : html`<form method="post" action="/review/decide" class="bulk">
<input type="hidden" name="_csrf" value="${a.csrf}">
<table><tr><th></th><th>item</th><th>url</th><th>source</th><th>proposed</th><th>latest evidence</th></tr>
${r.items.map((i) => itemRow(i, i.status === 'pending'))}
</table>
<button class="approve" name="action" value="approve" data-action="bulk-approve">Approve selected</button>
<button class="reject" name="action" value="reject" data-action="bulk-reject">Reject selected</button>
</form>`
}
${
  a.csrf === undefined || pendingIds.length === 0
    ? html`<table><tr><th>item</th><th>url</th><th>source</th><th>proposed</th><th>latest evidence</th></tr>${r.items.map((i) => itemRow(i, false))}</table>`
    : html`<p>${decideForm(pendingIds, a, `all ${pendingIds.length} ${r.reason}`)}</p>`
}
</div>`;
})}
</section>`,
)}`);
}

function itemRow(i: ReviewItem, selectable: boolean): Html {
  return as(html`<tr data-item="${i.id}">
${selectable ? html`<td><input type="checkbox" name="id" value="${i.id}" aria-label="select ${i.id}"></td>` : ''}
<td><a href="${localHref('/review/item', { id: i.id })}">${i.id}</a> ${i.status === 'pending' ? '' : html`<span class="muted">(${i.status}${i.decidedBy === undefined ? '' : ` by ${i.decidedBy}`})</span>`}</td>
<td>${externalLink(i.url)}</td><td>${i.sourceId}</td><td>${when(i.createdAt)}</td><td>${i.evidence.at(-1) ?? ''}</td></tr>`);
}

/** The run whose window holds `at` (the run that proposed an item), if kept. */
function runAt(runs: readonly RunSummary[], at: string): RunSummary | undefined {
  return runs.find((r) => at >= r.startedAt && at <= r.finishedAt);
}

function subjectOf(
  ctx: PageContext,
  x: { documentId: string; sourceId: string; url: string },
): SnapshotSubject {
  const authority = ctx.config.sources.find((s) => s.id === x.sourceId)?.authority;
  return {
    documentId: x.documentId,
    sourceId: x.sourceId,
    url: x.url,
    ...(authority === undefined ? {} : { authority }),
  };
}

/** The current version's text: from the snapshot that extracts to it, else its chunks joined. */
async function currentText(
  ctx: PageContext,
  record: DocumentRecord,
): Promise<{ text?: string; from: string }> {
  if (record.currentVersionId === undefined) return { from: 'no current version' };
  const subject = subjectOf(ctx, record);
  if (record.rawDigest !== undefined) {
    const t = await ctx.texts.ofDigest(record.rawDigest, subject);
    if (t.versionId === record.currentVersionId && t.text !== undefined)
      return { text: t.text, from: `raw snapshot ${t.digest.slice(0, 12)}` };
  }
  const byVersion = await ctx.texts.byVersion(subject);
  const t = byVersion.get(record.currentVersionId);
  if (t?.text !== undefined) return { text: t.text, from: `raw snapshot ${t.digest.slice(0, 12)}` };
  const chunks = await ctx.connector.listChunks(record.documentId, record.currentVersionId);
  if (chunks.length > 0)
    return { text: chunks.map((c) => c.text).join('\n\n'), from: 'its chunks in the store' };
  return { from: 'neither a raw snapshot nor chunks are kept' };
}

export async function reviewItemPage(
  ctx: PageContext,
  a: ActionContext,
  id: string,
): Promise<Html | undefined> {
  const item = await ctx.state.getReviewItem(id);
  if (item === undefined) return undefined;
  const record = await ctx.state.getDocument(item.documentId);
  const runs = await ctx.state.listRuns(item.sourceId, 200);
  const proposedBy = runAt(runs, item.createdAt);
  let diff: Html = as('');
  if (item.kind === 'ingestion' && item.rawDigest !== undefined && record !== undefined) {
    const held: SnapshotText = await ctx.texts.ofDigest(item.rawDigest, subjectOf(ctx, item));
    const current = await currentText(ctx, record);
    diff =
      held.text === undefined || current.text === undefined
        ? as(
            html`<p class="bad">No diff: ${held.problem ?? ''} ${current.text === undefined ? `current text: ${current.from}` : ''}</p>`,
          )
        : as(html`<h2>Current version vs held candidate</h2>
<p class="muted">current ${record.currentVersionId ?? '–'} (${current.from}); held ${item.versionId ?? '–'} (raw snapshot ${item.rawDigest.slice(0, 12)}, fetched ${when(held.fetchedAt)}); ${current.text.length} → ${held.text.length} characters.</p>
${sideBySide(current.text, held.text, { left: 'current (published)', right: 'held candidate' })}`);
  }
  return as(html`<section class="card" data-item="${item.id}">
<p><strong>${item.kind} / ${item.reason}</strong> — status <span data-status="${item.status}">${item.status}</span>${item.decidedAt === undefined ? '' : html`, decided ${when(item.decidedAt)} by <span data-decided-by>${item.decidedBy ?? ''}</span>`}</p>
<p>${externalLink(item.url)} · source ${item.sourceId} · proposed ${when(item.createdAt)} · ${docLink(item.documentId, 'document history')}</p>
${item.status === 'pending' ? html`<p>${decideForm([item.id], a, 'this item')}</p>` : ''}
<h2>Evidence</h2>
<ol class="evidence">${item.evidence.map((e) => html`<li>${e}</li>`)}</ol>
<h3>Coverage of the run that proposed it</h3>
${
  proposedBy === undefined
    ? html`<p class="muted">not proposed inside a kept run (an import, a review, or an older run)</p>`
    : html`<p data-coverage="${proposedBy.complete ? 'complete' : 'partial'}">run of ${when(proposedBy.startedAt)}: ${proposedBy.complete ? 'complete coverage (every listing read, every page answered)' : 'partial coverage'}; ${proposedBy.counts.urls ?? 0} URLs, ${proposedBy.counts.fetched200 ?? 0} × 200, ${proposedBy.counts.notModified ?? 0} × 304, ${proposedBy.counts.gone ?? 0} gone, ${proposedBy.counts.fetchErrors ?? 0} errors.</p>`
}
${
  record === undefined
    ? ''
    : html`<h3>Status history of the document</h3>
<p>now ${stateCell(record.status)} ${record.statusReasons.join('; ')}</p>
<table class="history"><tr><th>at</th><th>event</th><th>version</th><th>reasons (statuses, redirects)</th></tr>
${(record.history ?? []).map((h) => html`<tr><td>${when(h.at)}</td><td>${h.event}</td><td><code>${h.versionId?.slice(0, 12) ?? ''}</code></td><td>${h.reasons.join('; ')}</td></tr>`)}
</table>`
}
</section>
${diff}`);
}

// ---------------------------------------------------------------------------------------------
// Document

function headingPath(c: ListedChunk): string {
  const rawPath = c.metadata[FIELDS.headingPath];
  try {
    const parsed = JSON.parse(String(rawPath)) as unknown;
    if (Array.isArray(parsed)) return parsed.map(String).join(' > ');
  } catch {
    // fall back to the joined heading
  }
  return String(c.metadata[FIELDS.heading] ?? '');
}

/** What readers see as the current version's Source line, and a canonical the page only claimed. */
function citedAs(chunk: ListedChunk | undefined): Html {
  if (chunk === undefined) return as(html``);
  const claim = chunk.metadata[FIELDS.canonicalClaim];
  return as(
    html`<p>cited as ${externalLink(metadataCitation(chunk.metadata))}${typeof claim === 'string' ? html` · the page claims the canonical <code class="unsafe-url">${claim}</code> on another site: kept as its claim, never cited` : ''}</p>`,
  );
}

export async function documentPage(
  ctx: PageContext,
  id: string,
  pick: { readonly a?: string; readonly b?: string; readonly at?: string },
): Promise<{ title: string; body: Html } | undefined> {
  const record = await ctx.state.getDocument(id);
  if (record === undefined) return undefined;
  const asOf = await asOfSection(ctx, record, pick.at);
  const chunks = await ctx.connector.listChunks(record.documentId);
  const fromEpochs = new Map<string, number>();
  for (const c of chunks) {
    const v = String(c.metadata[FIELDS.versionId]);
    const from = Number(c.metadata[FIELDS.from]);
    if (Number.isFinite(from)) fromEpochs.set(v, Math.min(from, fromEpochs.get(v) ?? from));
  }
  const rows = versionRows(record, fromEpochs);
  const texts = await ctx.texts.byVersion(subjectOf(ctx, record));
  const current = chunks.filter((c) => c.metadata[FIELDS.versionId] === record.currentVersionId);
  const title = String(current[0]?.metadata[FIELDS.title] ?? '') || record.url;
  const chunkMeta = new Map<string, ListedChunk>();
  for (const c of chunks) chunkMeta.set(String(c.metadata[FIELDS.versionId]), c);
  const versionIds = rows.map((r) => r.versionId);
  const a = pick.a ?? versionIds.at(-2);
  const b = pick.b ?? versionIds.at(-1);
  let diff: Html = as('');
  if (a !== undefined && b !== undefined && a !== b) {
    const ta = texts.get(a)?.text ?? joined(chunks, a);
    const tb = texts.get(b)?.text ?? joined(chunks, b);
    diff =
      ta === undefined || tb === undefined
        ? as(
            html`<p class="muted">No diff: the text of ${ta === undefined ? a : b} is kept neither as a raw snapshot nor as chunks.</p>`,
          )
        : sideBySide(ta, tb, {
            left: `version ${a.slice(0, 12)}`,
            right: `version ${b.slice(0, 12)}`,
          });
  }
  const ts = (versionId: string, field: string, fallback?: string) => {
    if (versionId === record.currentVersionId) return fallback;
    const c = chunkMeta.get(versionId);
    const v = c?.metadata[field];
    return v === undefined || v === '' ? undefined : String(v);
  };
  const options = (selected: string | undefined) =>
    rows.map(
      (r) =>
        html`<option value="${r.versionId}" ${r.versionId === selected ? raw('selected') : ''}>${r.versionId.slice(0, 12)} (${when(r.queryableAt)})</option>`,
    );
  const body = as(html`<section class="card">
<p>${externalLink(record.url)} · source ${record.sourceId} · ${stateCell(record.status)} ${record.statusReasons.join('; ')}</p>
${citedAs(current[0])}
<p>document <code>${record.documentId}</code>; current version <code>${record.currentVersionId ?? '–'}</code> at epoch ${record.publishedEpoch ?? '–'}; last good observation ${when(record.lastGoodAt)}</p>
</section>
<h2>Version history</h2>
<table class="versions"><tr><th>version</th><th>event</th><th>source modified</th><th>retrieved</th><th>content changed</th><th>queryable</th><th>current in epochs</th><th>text kept</th></tr>
${rows.map((r) => {
  const t = texts.get(r.versionId);
  return html`<tr data-version="${r.versionId}"><td><code>${r.versionId.slice(0, 12)}</code>${r.current ? html` <strong>current</strong>` : ''}</td><td>${r.event}</td>
<td>${when(ts(r.versionId, FIELDS.sourceModifiedAt, record.timestamps.sourceModifiedAt))}</td>
<td>${when(ts(r.versionId, FIELDS.retrievedAt, record.timestamps.retrievedAt) ?? t?.fetchedAt)}</td>
<td>${when(ts(r.versionId, FIELDS.contentChangedAt, record.timestamps.contentChangedAt))}</td>
<td>${when(r.queryableAt)}</td>
<td data-epochs>${r.fromEpoch === undefined ? '?' : r.fromEpoch} – ${r.current ? 'now' : r.toEpoch === undefined ? '?' : r.toEpoch}</td>
<td>${t !== undefined ? 'raw snapshot' : chunkMeta.has(r.versionId) ? 'chunks' : html`<span class="muted">no</span>`}</td></tr>`;
})}
</table>
<p class="muted">"current in epochs" is [from, to): readers filtering on an epoch in that range saw this version. Older versions' source-modified and content-changed times are read from their chunks while the store keeps them.</p>
${asOf}
<h2>Diff between two versions</h2>
${
  rows.length < 2
    ? html`<p class="muted">only one version so far</p>`
    : html`<form method="get" action="/doc"><input type="hidden" name="id" value="${record.documentId}">
<label>from <select name="a">${options(a)}</select></label> <label>to <select name="b">${options(b)}</select></label> <button>Show diff</button></form>
${diff}`
}
<h2>Chunks of the current version (${current.length})</h2>
<table class="chunks"><tr><th>#</th><th>heading path</th><th>tokens</th><th>text</th></tr>
${current.map((c) => html`<tr><td class="num">${String(c.metadata[FIELDS.ordinal])}</td><td>${headingPath(c)}</td><td class="num" data-tokens>${String(c.metadata[FIELDS.tokenCount] ?? '')}</td><td><details><summary>${c.text.slice(0, 90)}${c.text.length > 90 ? '…' : ''}</summary><pre>${c.text}</pre></details></td></tr>`)}
</table>
<h2>Full history</h2>
<table class="history"><tr><th>at</th><th>event</th><th>version</th><th>epoch</th><th>reasons</th></tr>
${(record.history ?? []).map((h) => html`<tr><td>${when(h.at)}</td><td>${h.event}</td><td><code>${h.versionId?.slice(0, 12) ?? ''}</code></td><td class="num">${h.epoch ?? ''}</td><td>${h.reasons.join('; ')}</td></tr>`)}
</table>`);
  return { title, body };
}

/** Which version was current at a chosen time (the epoch history; docs/governance.md). */
async function asOfSection(
  ctx: PageContext,
  record: DocumentRecord,
  at: string | undefined,
): Promise<Html> {
  const form = html`<form method="get" action="/doc"><input type="hidden" name="id" value="${record.documentId}">
<label>time <input name="at" value="${at ?? ''}" placeholder="2026-11-30T12:00:00Z"></label> <button>Show version</button></form>`;
  if (at === undefined || at.trim() === '') return as(html`<h2>As of</h2>${form}`);
  const t = Date.parse(at);
  if (Number.isNaN(t))
    return as(
      html`<h2>As of</h2>${form}<p class="muted">"${at}" is not a time; write one like 2026-11-30T12:00:00Z.</p>`,
    );
  const view = await viewAsOf(ctx, new Date(t));
  if (typeof view === 'string')
    return as(
      html`<h2>As of</h2>${form}<p class="muted" data-asof>${view.replace(/^ragfresh: /, '')}</p>`,
    );
  const v = versionAsOf(record, view.epoch);
  return as(
    html`<h2>As of</h2>${form}<p data-asof="${v?.versionId ?? ''}">At ${new Date(t).toISOString()} the epoch in force was ${view.epoch}: ${
      v === undefined
        ? 'no version of this document was current.'
        : html`version <code>${v.versionId}</code> was current (since ${when(v.at)}, epoch ${v.epoch}).`
    }</p>`,
  );
}

function joined(chunks: readonly ListedChunk[], versionId: string): string | undefined {
  const of = chunks.filter((c) => c.metadata[FIELDS.versionId] === versionId);
  return of.length === 0 ? undefined : of.map((c) => c.text).join('\n\n');
}

// ---------------------------------------------------------------------------------------------
// Runs

export async function runsPage(
  ctx: PageContext,
  filter: { readonly source?: string; readonly run?: string },
): Promise<Html> {
  const sections: Html[] = [];
  for (const source of ctx.config.sources) {
    if (filter.source !== undefined && source.id !== filter.source) continue;
    const runs = await ctx.state.listRuns(source.id, ctx.runs);
    const records = await recordsOf(ctx.state, source.id);
    const shown = filter.run === undefined ? runs : runs.filter((r) => r.runId === filter.run);
    sections.push(
      as(html`<section class="card" data-source="${source.id}"><h2>${source.id}</h2>
${shown.length === 0 ? html`<p class="muted">no runs</p>` : ''}
${shown.map((run) => {
  const c = run.counts;
  const changed = changedInRun(run, records);
  return html`<div class="run" data-run="${run.runId}">
<h3>${when(run.startedAt)} → ${when(run.finishedAt)} (${run.complete ? 'complete' : 'partial'})</h3>
<table class="totals"><tr>${['urls', 'fetched200', 'notModified', 'published', 'unchangedContent', 'gone', 'fetchErrors', 'notTheDocument', 'rejected', 'chunksEmbedded', 'chunksReused', 'storeWrites', 'reviewCreated', 'removed'].map((k) => html`<th>${k}</th>`)}</tr>
<tr>${['urls', 'fetched200', 'notModified', 'published', 'unchangedContent', 'gone', 'fetchErrors', 'notTheDocument', 'rejected', 'chunksEmbedded', 'chunksReused', 'storeWrites', 'reviewCreated', 'removed'].map((k) => html`<td class="num">${c[k] ?? 0}</td>`)}</tr></table>
${run.alerts.length === 0 ? '' : html`<ul class="alerts">${run.alerts.map((x) => html`<li>${x}</li>`)}</ul>`}
${changed.length === 0 ? html`<p class="muted">no document changed</p>` : html`<p>Changed documents:</p><ul class="changed">${changed.map((d) => html`<li>${docLink(d.documentId, d.url)} — ${d.events.join(', ')}</li>`)}</ul>`}
</div>`;
})}
</section>`),
    );
  }
  return as(html`${sections}`);
}
