import { type Html, html } from './html.js';

/** One line of a chart: a value per run (undefined where the run has none). */
export interface Series {
  readonly key: string;
  readonly label: string;
  readonly color: string;
  readonly values: readonly (number | undefined)[];
}

export interface LineChartOptions {
  /** `data-chart` of the svg, so tests and scripts can find it. */
  readonly name: string;
  readonly title: string;
  /** X labels, one per run (ISO times). */
  readonly runs: readonly { readonly runId: string; readonly at: string }[];
  readonly series: readonly Series[];
  readonly format: (v: number) => string;
  /** A horizontal reference line (the freshness objective). */
  readonly reference?: { readonly label: string; readonly value: number };
  /** Fixed top of the y axis (e.g. 1 for a ratio). */
  readonly max?: number;
}

const W = 560;
const H = 190;
const PAD = { left: 56, right: 40, top: 26, bottom: 34 };

/**
 * A line chart as inline SVG: one polyline and one circle per value, each circle carrying its
 * run, series and value as data attributes and a <title> tooltip. Everything textual goes
 * through `html`, so series labels and run ids are escaped like any other text.
 */
export function lineChart(o: LineChartOptions): Html {
  const n = o.runs.length;
  const all = o.series.flatMap((s) => s.values.filter((v): v is number => v !== undefined));
  const top = o.max ?? Math.max(1, ...all, o.reference?.value ?? 0) * 1.1;
  const x = (i: number) => PAD.left + (n <= 1 ? 0.5 : i / (n - 1)) * (W - PAD.left - PAD.right);
  const y = (v: number) => H - PAD.bottom - (v / top) * (H - PAD.top - PAD.bottom);
  const ticks = [0, 0.5, 1].map((f) => f * top);
  const labelEvery = Math.max(1, Math.ceil(n / 6));
  const lines = o.series.map((s) => {
    const pts = s.values
      .map((v, i) => (v === undefined ? undefined : `${x(i).toFixed(1)},${y(v).toFixed(1)}`))
      .filter((p) => p !== undefined)
      .join(' ');
    const dots = s.values.map((v, i) =>
      v === undefined
        ? ''
        : html`<circle cx="${x(i).toFixed(1)}" cy="${y(v).toFixed(1)}" r="3" fill="${s.color}" data-series="${s.key}" data-run="${o.runs[i]!.runId}" data-value="${String(v)}"><title>${s.label} ${o.format(v)} — run ${o.runs[i]!.at}</title></circle>`,
    );
    return html`<polyline fill="none" stroke="${s.color}" stroke-width="1.6" points="${pts}"/>${dots}`;
  });
  const legend = o.series.map(
    (s, i) =>
      html`<rect x="${PAD.left + i * 130}" y="6" width="10" height="10" fill="${s.color}"/><text x="${PAD.left + i * 130 + 14}" y="15">${s.label}</text>`,
  );
  const ref =
    o.reference === undefined
      ? ''
      : html`<line x1="${PAD.left}" x2="${W - PAD.right}" y1="${y(o.reference.value).toFixed(1)}" y2="${y(o.reference.value).toFixed(1)}" stroke="#b3261e" stroke-dasharray="5 4" data-reference="${String(o.reference.value)}"/><text x="${W - PAD.right - 4}" y="${(y(o.reference.value) - 4).toFixed(1)}" text-anchor="end" fill="#b3261e">${o.reference.label} ${o.format(o.reference.value)}</text>`;
  return html`<svg class="chart" data-chart="${o.name}" role="img" aria-label="${o.title}" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" xmlns="http://www.w3.org/2000/svg">
<title>${o.title}</title>
${legend}
${ticks.map((t) => html`<line x1="${PAD.left}" x2="${W - PAD.right}" y1="${y(t).toFixed(1)}" y2="${y(t).toFixed(1)}" stroke="#e4e7eb"/><text x="${PAD.left - 6}" y="${(y(t) + 4).toFixed(1)}" text-anchor="end">${o.format(t)}</text>`)}
${o.runs.map((r, i) => (i % labelEvery === 0 || i === n - 1 ? html`<text x="${x(i).toFixed(1)}" y="${H - PAD.bottom + 16}" text-anchor="middle">${r.at.slice(5, 16).replace('T', ' ')}</text>` : ''))}
${ref}
${lines}
${n === 0 ? html`<text x="${W / 2}" y="${H / 2}" text-anchor="middle">no runs yet</text>` : ''}
</svg>` as Html;
}
