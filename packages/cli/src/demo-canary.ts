import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { renderCanaryLine } from './canaries.js';
import { queryCurrentView, renderHits, renderRefresh } from './commands.js';
import { type RagfreshConfig, resolveConfig } from './config.js';
import type { Logger } from './log.js';
import { startReturnsSite } from './returns-site.js';
import { openRuntime } from './runtime.js';

const QUESTION = 'how many days do I have to return an item';

/**
 * The seeds' worked example end to end: a returns page changes from 30 days to 14 days; a
 * canary expecting "14 days" passes against the staged view before promotion and against the
 * current view after it; then a redesign drops the sentence, the canary fails on the staged
 * view and the 14-day version stays current.
 */
export async function canaryDemo(
  print: (s: string) => void,
  log: Logger,
  section: (title: string) => void,
): Promise<void> {
  const site = await startReturnsSite();
  const dir = mkdtempSync(join(tmpdir(), 'ragfresh-demo-canary-'));
  const config = (canaries: NonNullable<RagfreshConfig['sources'][number]['canaries']>) =>
    resolveConfig({
      userAgent: 'ragfresh-demo/0.1 (+https://github.com/ragfresh/ragfresh)',
      dataDir: dir,
      sources: [{ id: 'shop', urls: [site.returnsUrl, site.shippingUrl], canaries }],
      fetch: { minIntervalMs: 0, allowPrivateNetworks: true },
    });
  const refresh = async (canaries: Parameters<typeof config>[0]) => {
    const rt = await openRuntime(config(canaries), { log });
    try {
      const report = await rt.engine.refresh({ all: true });
      print(renderRefresh(report));
      for (const s of report.sources)
        for (const c of (s as { canaries?: import('@ragfresh/core').CanaryResult[] }).canaries ??
          [])
          print(renderCanaryLine(s.sourceId, c));
      print(`\nquery "${QUESTION}":`);
      const hits = await queryCurrentView(rt, QUESTION, 2, { sourceId: 'shop' });
      print(renderHits(hits.filter((h) => h.header.includes(site.returnsUrl)).slice(0, 1), 200));
    } finally {
      await rt.close();
    }
  };
  const canary = [
    { query: QUESTION, expect: { phrase: '14 days', url: site.returnsUrl } },
  ] as const;
  try {
    section('11. canaries: the returns page says 30 days (published before any canary)');
    await refresh([]);
    section('12. the policy changes to 14 days; a canary expects "14 days" on the returns page');
    site.set('14 days');
    await refresh(canary);
    section('13. a redesign drops the sentence: the canary holds the promotion');
    site.set('redesign');
    await refresh(canary);
  } finally {
    await site.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
