import { type ChangeObject, diffLines, diffWordsWithSpace } from 'diff';
import { type Html, html } from './html.js';

/** One row of a side-by-side diff. */
interface Row {
  readonly kind: 'same' | 'change' | 'gap';
  readonly left?: { readonly n: number; readonly text: string };
  readonly right?: { readonly n: number; readonly text: string };
  readonly skipped?: number;
}

const splitLines = (value: string) => value.replace(/\n$/, '').split('\n');

/** Lines of unchanged text kept around each change; longer unchanged runs fold into a gap row. */
const CONTEXT = 3;

/** Side-by-side rows from jsdiff's line diff: removed and added runs are paired line by line. */
export function diffRows(
  before: string,
  after: string,
): { rows: Row[]; added: number; removed: number } {
  const parts: ChangeObject<string>[] = diffLines(before, after);
  const rows: Row[] = [];
  let l = 1;
  let r = 1;
  let added = 0;
  let removed = 0;
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i]!;
    if (!p.added && !p.removed) {
      const lines = splitLines(p.value);
      const keepHead = i === 0 ? 0 : CONTEXT;
      const keepTail = i === parts.length - 1 ? 0 : CONTEXT;
      lines.forEach((text, k) => {
        const inHead = k < keepHead;
        const inTail = k >= lines.length - keepTail;
        if (inHead || inTail || lines.length <= keepHead + keepTail + 1)
          rows.push({ kind: 'same', left: { n: l + k, text }, right: { n: r + k, text } });
        else if (k === keepHead)
          rows.push({ kind: 'gap', skipped: lines.length - keepHead - keepTail });
      });
      l += lines.length;
      r += lines.length;
      continue;
    }
    const del = p.removed ? splitLines(p.value) : [];
    const next = parts[i + 1];
    const add = p.added ? splitLines(p.value) : next?.added ? splitLines(next.value) : [];
    if (p.removed && next?.added) i++;
    removed += del.length;
    added += add.length;
    for (let k = 0; k < Math.max(del.length, add.length); k++)
      rows.push({
        kind: 'change',
        ...(k < del.length ? { left: { n: l + k, text: del[k]! } } : {}),
        ...(k < add.length ? { right: { n: r + k, text: add[k]! } } : {}),
      });
    l += del.length;
    r += add.length;
  }
  return { rows, added, removed };
}

/** Word-level marks inside a changed pair of lines. */
function marked(a: string, b: string, side: 'left' | 'right'): Html {
  const words = diffWordsWithSpace(a, b);
  return html`${words.map((w) =>
    w.added
      ? side === 'right'
        ? html`<ins>${w.value}</ins>`
        : ''
      : w.removed
        ? side === 'left'
          ? html`<del>${w.value}</del>`
          : ''
        : w.value,
  )}` as Html;
}

/** A side-by-side diff table; every line of text is escaped by `html`. */
export function sideBySide(
  before: string,
  after: string,
  labels: { readonly left: string; readonly right: string },
): Html {
  const { rows, added, removed } = diffRows(before, after);
  const body = rows.map((row) => {
    if (row.kind === 'gap')
      return html`<tr class="gap"><td colspan="4">… ${row.skipped} unchanged lines …</td></tr>`;
    if (row.kind === 'same')
      return html`<tr><td class="ln">${row.left!.n}</td><td>${row.left!.text}</td><td class="ln">${row.right!.n}</td><td>${row.right!.text}</td></tr>`;
    const both = row.left !== undefined && row.right !== undefined;
    const left =
      row.left === undefined
        ? ''
        : both
          ? marked(row.left.text, row.right!.text, 'left')
          : row.left.text;
    const right =
      row.right === undefined
        ? ''
        : both
          ? marked(row.left!.text, row.right.text, 'right')
          : row.right.text;
    return html`<tr><td class="ln">${row.left?.n ?? ''}</td><td class="${row.left === undefined ? '' : 'del'}">${left}</td><td class="ln">${row.right?.n ?? ''}</td><td class="${row.right === undefined ? '' : 'add'}">${right}</td></tr>`;
  });
  return html`<p class="diff-summary" data-added="${added}" data-removed="${removed}">${removed} lines removed, ${added} lines added.</p>
<table class="diff" data-diff="side-by-side"><colgroup><col class="ln"><col><col class="ln"><col></colgroup>
<thead><tr><th></th><th>${labels.left}</th><th></th><th>${labels.right}</th></tr></thead>
<tbody>${rows.length === 0 ? html`<tr><td colspan="4">identical texts</td></tr>` : body}</tbody></table>` as Html;
}
