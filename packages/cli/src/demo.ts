import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { documentId } from '@ragfresh/core';
import { queryCurrentView, renderHits, renderRefresh } from './commands.js';
import { type RagfreshConfig, resolveConfig } from './config.js';
import type { Logger } from './log.js';
import { openRuntime } from './runtime.js';
import { renderStatus, sourceStatuses, table } from './status.js';

/**
 * `ragfresh demo`: the whole job offline. A simulated documentation web on loopback is
 * refreshed into an embedded LanceDB index (hashing embeddings, SQLite state), then mutated
 * (an edit, a shrink, an outage, a consent wall, a deletion) and refreshed again.
 */
export async function runDemo(opts: {
  print: (s: string) => void;
  log: Logger;
  keep?: boolean;
}): Promise<number> {
  const { print } = opts;
  const started = performance.now();
  const dir = mkdtempSync(join(tmpdir(), 'ragfresh-demo-'));
  // The simulated web ships in the ragfresh repository (private package), not on npm.
  let startSimWeb: typeof import('@ragfresh/sim').startSimWeb;
  try {
    ({ startSimWeb } = await import('@ragfresh/sim'));
  } catch {
    print(
      'ragfresh: the demo needs @ragfresh/sim, which ships in the ragfresh repository; run it from a clone.',
    );
    return 2;
  }
  const sim = await startSimWeb({ seed: 7, hosts: 2, pagesPerHost: 6 });
  try {
    return await demoOn(sim, dir, opts, started);
  } finally {
    await sim.stop();
    if (opts.keep !== true) rmSync(dir, { recursive: true, force: true });
  }
}

async function demoOn(
  sim: import('@ragfresh/sim').SimWeb,
  dir: string,
  opts: { print: (s: string) => void; log: Logger },
  started: number,
): Promise<number> {
  const { print } = opts;
  const hosts = sim.hosts();
  const raw: RagfreshConfig = {
    userAgent: 'ragfresh-demo/0.1 (+https://github.com/ragfresh/ragfresh)',
    dataDir: dir,
    sources: hosts.map((h, i) => ({
      id: `docs-${i}`,
      sitemaps: [`${sim.origin(h)}/sitemap.xml`],
      every: '1s',
      freshnessObjective: '1h',
      authority: 'official',
      contract: { maxShrink: 0.5, minChars: 200 },
    })),
    fetch: { minIntervalMs: 0, allowPrivateNetworks: true },
    deletion: { goneChecks: 2, minGoneAge: 0 },
    gates: { maxRetireShare: 0.5 },
  };
  const config = resolveConfig(raw);
  const rt = await openRuntime(config, { log: opts.log });
  const section = (title: string) =>
    print(`\n=== ${title} ${'='.repeat(Math.max(0, 70 - title.length))}`);
  try {
    print(
      `ragfresh demo — simulated web: ${hosts.map((h) => `${h} at ${sim.origin(h)}`).join(', ')}`,
    );
    print(
      `data dir ${dir} (LanceDB index, SQLite state, raw snapshots); hashing embeddings (lexical, offline)`,
    );

    section('1. cold refresh');
    let report = await rt.engine.refresh({ all: true });
    print(renderRefresh(report));

    const pages = sim.urls(hosts[0]!).filter((u) => new URL(u).pathname !== '/');
    const [edited, shrunk, outage, walled, deleted] = pages;
    if (
      edited === undefined ||
      shrunk === undefined ||
      outage === undefined ||
      walled === undefined ||
      deleted === undefined
    ) {
      throw new Error('demo needs at least 6 pages per host');
    }
    const question = 'what is the quota in requests per minute';
    section(`2. query before the edit: "${question}"`);
    print(renderHits(await queryCurrentView(rt, question, 1), 300));

    section('3. the site changes');
    sim.mutate(edited, 'edit', {
      section: 0,
      text: 'Update: the quota is now 42 requests per minute.',
    });
    sim.mutate(shrunk, 'shrink', { keepSections: 1 });
    sim.mutate(outage, 'outage', { retryAfter: 1 });
    sim.mutate(walled, 'consentWall');
    sim.mutate(deleted, 'delete410');
    print(
      table(
        ['mutation', 'url'],
        [
          ['edit (new sentence in section 1)', edited],
          ['shrink (sections removed)', shrunk],
          ['outage (503 + Retry-After)', outage],
          ['consent wall served with 200', walled],
          ['deleted (410 Gone)', deleted],
        ],
      ),
    );

    section('4. refresh after the changes');
    report = await rt.engine.refresh({ all: true });
    print(renderRefresh(report));

    section('5. refresh again: the 410 is confirmed by a second check');
    report = await rt.engine.refresh({ all: true });
    print(renderRefresh(report));

    section('6. status');
    print(renderStatus(await sourceStatuses(rt.config, rt.state)));

    section('7. review queue');
    const pending = await rt.state.listReviewItems({ status: 'pending' });
    print(
      table(
        ['id', 'kind', 'url', 'reason', 'evidence'],
        pending.map((p) => [p.id, p.kind, p.url, p.reason, p.evidence.join('; ')]),
      ),
    );
    for (const item of pending) {
      const ok = await rt.engine.approve(item.id, 'demo');
      print(
        `approve ${item.id}: ${ok ? 'tombstone written, chunks retired from the current view' : 'blocked'}`,
      );
    }

    section(`8. the same query after the edit: "${question}"`);
    print(renderHits(await queryCurrentView(rt, question, 2), 600));

    section('9. a page behind a consent wall keeps its last good copy, labelled stale');
    const wallFacts = sim.pageFacts(walled);
    const wallQuestion = `${wallFacts.title} ${wallFacts.phrase}`;
    print(`query, scoped to that page: "${wallQuestion}"`);
    const wallDoc = documentId(raw.sources[0]!.id, walled);
    print(renderHits(await queryCurrentView(rt, wallQuestion, 1, { documentId: wallDoc }), 240));

    section('10. final status');
    print(renderStatus(await sourceStatuses(rt.config, rt.state)));
    const { canaryDemo } = await import('./demo-canary.js');
    await canaryDemo(print, opts.log, section);
    print(`\ndemo finished in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    return 0;
  } finally {
    await rt.close();
  }
}
