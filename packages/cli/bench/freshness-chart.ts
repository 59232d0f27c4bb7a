// The freshness bench's SVG: four panels (what a reader gets wrong, what the update exposes,
// what it deletes, what it costs), one group of bars per round, one bar per pipeline.
import type { PipelineRow, Round } from './freshness.bench.ts';

const COLORS = ['#c0504d', '#e08a3c', '#d4b13f', '#2e7d5b', '#4f81bd'];

interface Panel {
  readonly title: string;
  readonly value: (r: PipelineRow) => number;
}

const PANELS: readonly Panel[] = [
  {
    title:
      'wrong answers in the view: stale docs + good copies lost + interstitial chunks + duplicates',
    value: (r) =>
      r.audit.stale + r.audit.goodCopiesLost + r.audit.interstitialChunks + r.audit.duplicateChunks,
  },
  {
    title: 'documents a concurrent reader saw with two versions or none during the update',
    value: (r) => r.twoVersions + r.none,
  },
  { title: 'documents lost from the view', value: (r) => r.audit.lost },
  { title: 'embeddings computed', value: (r) => r.embedded },
];

/** Axis labels short enough not to overlap at seven rounds per panel. */
const SHORT: Readonly<Record<string, string>> = {
  '1%-edit+shrink': 'edit+shrink',
  'partial-60%': 'partial 60%',
  'sitemap-drop-40%': 'sitemap -40%',
};

const esc = (s: string) => s.replaceAll('&', '&amp;').replaceAll('<', '&lt;');

export function freshnessChart(
  rows: readonly PipelineRow[],
  rounds: readonly Round[],
  pipelines: readonly string[],
): string {
  const panelW = 560;
  const panelH = 220;
  const pad = { left: 48, top: 34, bottom: 44 };
  const width = panelW * 2 + 20;
  const legendH = 28 + 18 * Math.ceil(pipelines.length / 2);
  const height = legendH + (panelH + 20) * 2;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" font-family="system-ui, sans-serif" font-size="11" role="img">`,
    '<title>ragfresh vs LangChain.js index() per round: wrong answers in the view, documents seen with two versions or none, documents lost, embeddings computed</title>',
    `<rect width="${width}" height="${height}" fill="#fff"/>`,
    `<text x="10" y="18" font-size="14" font-weight="600">ragfresh vs LangChain.js index() on the same simulated web (pnpm bench:freshness)</text>`,
  ];
  pipelines.forEach((p, i) => {
    const x = 10 + (i % 2) * 560;
    const y = 30 + Math.floor(i / 2) * 18;
    out.push(
      `<rect x="${x}" y="${y}" width="12" height="12" fill="${COLORS[i % COLORS.length]}"/>`,
      `<text x="${x + 18}" y="${y + 10}">${esc(p)}</text>`,
    );
  });
  PANELS.forEach((panel, pi) => {
    const ox = (pi % 2) * (panelW + 20);
    const oy = legendH + Math.floor(pi / 2) * (panelH + 20);
    const plotW = panelW - pad.left - 10;
    const plotH = panelH - pad.top - pad.bottom;
    const max = Math.max(1, ...rows.map(panel.value));
    out.push(
      `<text x="${ox + 10}" y="${oy + 18}" font-weight="600">${esc(panel.title)}</text>`,
      `<line x1="${ox + pad.left}" y1="${oy + pad.top + plotH}" x2="${ox + pad.left + plotW}" y2="${oy + pad.top + plotH}" stroke="#888"/>`,
      `<text x="${ox + pad.left - 4}" y="${oy + pad.top + 4}" text-anchor="end">${max}</text>`,
      `<text x="${ox + pad.left - 4}" y="${oy + pad.top + plotH}" text-anchor="end">0</text>`,
    );
    const groupW = plotW / rounds.length;
    const barW = (groupW - 8) / pipelines.length;
    rounds.forEach((round, ri) => {
      const gx = ox + pad.left + ri * groupW + 4;
      pipelines.forEach((p, i) => {
        const row = rows.find((r) => r.round === round && r.pipeline === p);
        const v = row === undefined ? 0 : panel.value(row);
        const h = (v / max) * plotH;
        const x = gx + i * barW;
        const y = oy + pad.top + plotH - h;
        out.push(
          `<rect x="${x.toFixed(1)}" y="${y.toFixed(1)}" width="${(barW - 1).toFixed(1)}" height="${Math.max(h, v > 0 ? 1 : 0).toFixed(1)}" fill="${COLORS[i % COLORS.length]}"><title>${esc(`${p}, ${round}: ${v}`)}</title></rect>`,
        );
      });
      out.push(
        `<text x="${(gx + groupW / 2 - 4).toFixed(1)}" y="${oy + pad.top + plotH + 14}" text-anchor="middle">${esc(SHORT[round] ?? round)}</text>`,
      );
    });
  });
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
